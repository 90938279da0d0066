// GET /api/v3/topic/{topic}/consumers?cursor=&limit=: the topic's consumer groups with their
// figures, settings and push health, by name, a page at a time.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_CONSUMERS } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";

export function consumersRoute(app: FastifyInstance, management: ManagementService): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topic/:topic/consumers", { schema: LIST_CONSUMERS }, async (request) => {
      const { limit = LIMITS.groupsPageLimit.default, cursor = null } = request.query;
      return management.consumers(
        { namespace: request.namespace, topic: request.params.topic },
        cursor,
        limit,
      );
    });
}

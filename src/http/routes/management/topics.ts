// GET /api/v3/topics?cursor=&limit=: the namespace's topics by name, a page at a time.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_TOPICS } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";

export function topicsRoute(app: FastifyInstance, management: ManagementService): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topics", { schema: LIST_TOPICS }, async (request) => {
      const { limit = LIMITS.topicsPageLimit.default, cursor = null } = request.query;
      return management.listTopics(request.namespace, cursor, limit);
    });
}

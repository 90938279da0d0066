// GET /api/v3/topic/{topic}/messages?after=&limit=&payload=: the messages consumer groups see,
// read without leasing them.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { PEEK } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";

export function peekRoute(app: FastifyInstance, management: ManagementService): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topic/:topic/messages", { schema: PEEK }, async (request) => {
      const { limit = LIMITS.peekLimit.default, payload, after = null } = request.query;
      return management.peek(
        { namespace: request.namespace, topic: request.params.topic },
        after,
        limit,
        payload === "full",
      );
    });
}

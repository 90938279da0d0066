// GET /api/v3/topic/{topic}/consumers: the topic's consumer groups with their figures, settings
// and push health.
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { LIST_CONSUMERS } from "../../openapi/management-routes.js";
import { topicOf } from "../../params.js";

export function consumersRoute(app: FastifyInstance, management: ManagementService): void {
  app.get("/api/v3/topic/:topic/consumers", { schema: LIST_CONSUMERS }, async (request) =>
    management.consumers(topicOf(request)),
  );
}

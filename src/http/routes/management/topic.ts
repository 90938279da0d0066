// GET /api/v3/topic/{topic}: one topic's figures and the settings that apply to it.
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { GET_TOPIC } from "../../openapi/management-routes.js";
import { topicOf } from "../../params.js";

export function topicRoute(app: FastifyInstance, management: ManagementService): void {
  app.get("/api/v3/topic/:topic", { schema: GET_TOPIC }, async (request) =>
    management.topic(topicOf(request)),
  );
}

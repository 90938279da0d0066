// GET /api/v3/topic/{topic}: one topic's figures and the settings that apply to it.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { GET_TOPIC } from "../../openapi/management-routes.js";

export function topicRoute(app: FastifyInstance, management: ManagementService): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topic/:topic", { schema: GET_TOPIC }, async (request) =>
      management.topic({ namespace: request.namespace, topic: request.params.topic }),
    );
}

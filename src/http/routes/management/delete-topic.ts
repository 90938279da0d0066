// DELETE /api/v3/topic/{topic}: the topic with its messages, groups, settings and keys.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { DELETE_TOPIC } from "../../openapi/management-routes.js";
import { audited, type AuditLog } from "./audit.js";

export function deleteTopicRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .delete("/api/v3/topic/:topic", { schema: DELETE_TOPIC }, async (request, reply) => {
      const at = { namespace: request.namespace, topic: request.params.topic };
      await audited(audit, request, "delete_topic", { topic: at.topic }, () =>
        management.deleteTopic(at),
      );
      return reply.code(204).send();
    });
}

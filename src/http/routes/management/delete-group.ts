// DELETE /api/v3/topic/{topic}/consumer/{group}: the group, its position and its leases.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { DELETE_GROUP } from "../../openapi/management-routes.js";
import { audited, type AuditLog } from "./audit.js";

export function deleteGroupRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .delete(
      "/api/v3/topic/:topic/consumer/:group",
      { schema: DELETE_GROUP },
      async (request, reply) => {
        const at = { namespace: request.namespace, ...request.params };
        await audited(audit, request, "delete_group", { topic: at.topic, group: at.group }, () =>
          management.deleteGroup(at),
        );
        return reply.code(204).send();
      },
    );
}

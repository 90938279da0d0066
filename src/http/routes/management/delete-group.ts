// DELETE /api/v3/topic/{topic}/consumer/{group}: the group, its position and its leases.
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { DELETE_GROUP } from "../../openapi/management-routes.js";
import { groupOf } from "../../params.js";
import { audited, type AuditLog } from "./audit.js";

export function deleteGroupRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app.delete(
    "/api/v3/topic/:topic/consumer/:group",
    { schema: DELETE_GROUP },
    async (request, reply) => {
      const at = groupOf(request);
      await audited(audit, request, "delete_group", { topic: at.topic, group: at.group }, () =>
        management.deleteGroup(at),
      );
      return reply.code(204).send();
    },
  );
}

// POST /api/v3/topic/{topic}/purge: every message removed; groups and settings stay.
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { PURGE } from "../../openapi/management-routes.js";
import { topicOf } from "../../params.js";
import { audited, type AuditLog } from "./audit.js";

export function purgeRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app.post("/api/v3/topic/:topic/purge", { schema: PURGE }, async (request) => {
    const at = topicOf(request);
    return audited(audit, request, "purge_topic", { topic: at.topic }, () => management.purge(at));
  });
}

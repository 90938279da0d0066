// POST /api/v3/topic/{topic}/purge: every message removed; groups and settings stay.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { PURGE } from "../../openapi/management-routes.js";
import { audited, type AuditLog } from "./audit.js";

export function purgeRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .post("/api/v3/topic/:topic/purge", { schema: PURGE }, async (request) => {
      const at = { namespace: request.namespace, topic: request.params.topic };
      return audited(audit, request, "purge_topic", { topic: at.topic }, () =>
        management.purge(at),
      );
    });
}

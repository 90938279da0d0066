// POST /api/v3/topic/{topic}/consumer/{group}/seek {"to": "earliest" | "latest" | ISO time}:
// the group next receives from there; its outstanding receipt handles turn stale.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { SEEK_BODY } from "../../../api/management.js";
import { SEEK } from "../../openapi/management-routes.js";
import type { SeekTarget } from "../../../queue/management/queue-admin.js";
import { checkedBody } from "../../validation.js";
import { audited, type AuditLog } from "./audit.js";

export function seekRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .post(
      "/api/v3/topic/:topic/consumer/:group/seek",
      { bodyLimit: 1024, schema: SEEK },
      async (request) => {
        const at = { namespace: request.namespace, ...request.params };
        const to = seekTarget(checkedBody(request.body, SEEK_BODY).to);
        await audited(
          audit,
          request,
          "seek_group",
          { topic: at.topic, group: at.group, to: typeof to === "string" ? to : to.timeMs },
          () => management.seek(at, to),
        );
        return { to: typeof to === "string" ? to : new Date(to.timeMs).toISOString() };
      },
    );
}

/** What the checked `to` names: a time is read as the check read it (src/http/validation.ts). */
function seekTarget(to: string): SeekTarget {
  return to === "earliest" || to === "latest" ? to : { timeMs: Date.parse(to) };
}

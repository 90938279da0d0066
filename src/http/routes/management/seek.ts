// POST /api/v3/topic/{topic}/consumer/{group}/seek {"to": "earliest" | "latest" | ISO time}:
// the group next receives from there; its outstanding receipt handles turn stale.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../../errors.js";
import type { ManagementService } from "../../../queue/management/management-service.js";
import { SEEK } from "../../openapi/management-routes.js";
import type { SeekTarget } from "../../../queue/management/queue-admin.js";
import { jsonBody } from "../../encoding/json-body.js";
import { groupOf } from "../../params.js";
import { audited, type AuditLog } from "./audit.js";

const SHAPE =
  'The body must be JSON of the form {"to": "earliest" | "latest" | "<ISO 8601 time>"}.';

export function seekRoute(
  app: FastifyInstance,
  management: ManagementService,
  audit: AuditLog,
): void {
  app.post(
    "/api/v3/topic/:topic/consumer/:group/seek",
    { bodyLimit: 1024, schema: SEEK },
    async (request) => {
      const at = groupOf(request);
      const to = seekTarget(jsonBody(request.body));
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

function seekTarget(body: unknown): SeekTarget {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AppError("invalid_request_body", { message: SHAPE });
  }
  const { to, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || typeof to !== "string") {
    throw new AppError("invalid_request_body", { message: SHAPE });
  }
  if (to === "earliest" || to === "latest") return to;
  const timeMs = Date.parse(to);
  if (!/^\d{4}-\d\d-\d\dT/.test(to) || !Number.isFinite(timeMs)) {
    throw new AppError("invalid_request_body", { message: SHAPE });
  }
  return { timeMs };
}

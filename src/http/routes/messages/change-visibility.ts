// Extend or release a lease: PATCH .../lease/{receiptHandle}, or POST .../lease/{receiptHandle}/
// visibility for clients that cannot send PATCH. Body {"visibilityTimeoutSeconds": N}; 0 releases.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AppError } from "../../../errors.js";
import { LIMITS } from "../../../queue/limits.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { changeVisibility } from "../../openapi/message-routes.js";
import { groupOf, param } from "../../params.js";

function visibilitySeconds(body: unknown): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.isBuffer(body) ? body.toString("utf8") : "");
  } catch {
    throw new AppError("invalid_request_body");
  }
  if (typeof parsed !== "object" || parsed === null || !("visibilityTimeoutSeconds" in parsed)) {
    throw new AppError("invalid_request_body");
  }
  const n = parsed.visibilityTimeoutSeconds;
  const { min, max } = LIMITS.visibilityTimeoutSeconds;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
    throw new AppError("invalid_visibility_timeout");
  }
  return n;
}

export function changeVisibilityRoutes(app: FastifyInstance, queue: QueueService): void {
  const handler = async (request: FastifyRequest) => {
    const group = groupOf(request);
    const handle = param(request, "receiptHandle");
    const seconds = visibilitySeconds(request.body);
    const deadline = await queue.changeVisibility(group, handle, seconds);
    return { visibilityDeadline: deadline.toISOString() };
  };
  app.patch(
    "/api/v3/topic/:topic/consumer/:group/lease/:receiptHandle",
    { schema: changeVisibility(false) },
    handler,
  );
  app.post(
    "/api/v3/topic/:topic/consumer/:group/lease/:receiptHandle/visibility",
    { schema: changeVisibility(true) },
    handler,
  );
}

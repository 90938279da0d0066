// Redrive: POST /api/v3/topic/{deadLetterTopic}/redrive with {"topic"?, "limit"?}: moves
// dead-lettered messages back, oldest first (QueueService.redrive), and answers
// {"moved": n, "remaining": m} (m: messages still in the dead-letter topic). `vqs dlq redrive`
// calls it in rounds.
import type { FastifyInstance } from "fastify";
import { AppError } from "../../../errors.js";
import { isValidName, LIMITS } from "../../../queue/limits.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { jsonBody } from "../../encoding/json-body.js";
import { REDRIVE } from "../../openapi/settings-routes.js";
import { topicOf } from "../../params.js";
import { audited, type AuditLog } from "../management/audit.js";

const REDRIVE_LIMIT = LIMITS.redriveLimit;

const SHAPE = `The body must be JSON of the form {"topic": <topic name>, "limit": <integer ${REDRIVE_LIMIT.min}..${REDRIVE_LIMIT.max}>}, both optional.`;

export function redriveRoute(app: FastifyInstance, queue: QueueService, audit: AuditLog): void {
  app.post(
    "/api/v3/topic/:topic/redrive",
    { bodyLimit: 4096, schema: REDRIVE },
    async (request) => {
      const from = topicOf(request);
      const raw = (request.body as Buffer | undefined)?.length ? jsonBody(request.body) : {};
      const { target, limit } = redriveOptions(raw);
      return audited(audit, request, "redrive", { topic: from.topic, target, limit }, () =>
        queue.redrive(from, { target, limit }),
      );
    },
  );
}

function redriveOptions(raw: unknown): { target: string | null; limit: number } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new AppError("invalid_request_body", { message: SHAPE });
  }
  const { topic, limit, ...rest } = raw as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new AppError("invalid_request_body", { message: SHAPE });
  if (topic !== undefined && (typeof topic !== "string" || !isValidName(topic))) {
    throw new AppError("invalid_topic_name");
  }
  if (
    limit !== undefined &&
    (typeof limit !== "number" ||
      !Number.isSafeInteger(limit) ||
      limit < REDRIVE_LIMIT.min ||
      limit > REDRIVE_LIMIT.max)
  ) {
    throw new AppError("invalid_request_body", { message: SHAPE });
  }
  return { target: topic ?? null, limit: limit ?? REDRIVE_LIMIT.default };
}

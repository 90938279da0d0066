// Redrive: POST /api/v3/topic/{deadLetterTopic}/redrive with {"topic"?, "limit"?}: moves
// dead-lettered messages back, oldest first (QueueService.redrive), and answers
// {"moved": n, "remaining": m} (m: messages still in the dead-letter topic). `vqs dlq redrive`
// calls it in rounds.
import type { FastifyInstance } from "fastify";
import { REDRIVE_BODY } from "../../../api/settings.js";
import { LIMITS } from "../../../queue/limits.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { REDRIVE } from "../../openapi/settings-routes.js";
import { topicOf } from "../../params.js";
import { checkedBody } from "../../validation.js";
import { audited, type AuditLog } from "../management/audit.js";

export function redriveRoute(app: FastifyInstance, queue: QueueService, audit: AuditLog): void {
  app.post(
    "/api/v3/topic/:topic/redrive",
    { bodyLimit: 4096, schema: REDRIVE },
    async (request) => {
      const from = topicOf(request);
      const body = (request.body as Buffer | undefined)?.length
        ? checkedBody(request.body, REDRIVE_BODY)
        : {};
      const target = body.topic ?? null;
      const limit = body.limit ?? LIMITS.redriveLimit.default;
      return audited(audit, request, "redrive", { topic: from.topic, target, limit }, () =>
        queue.redrive(from, { target, limit }),
      );
    },
  );
}

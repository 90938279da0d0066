// Batch publish (the client's experimental_sendBatch): POST /api/v3/topic/{topic}/batch with a
// multipart/mixed body of 1 to 100 messages, each part with its own Content-Type and Vqs-*
// headers. Answers {results: [...]}: one entry per part, in order; a bad part fails alone. Each
// part counts as a request in the tenant's rate limit: the parts the budget has no room for fail
// alone with 429 rate_limited (retryable), the first ones stored.
import type { BatchAnswer, BatchResult } from "../../../api/messages.js";
import type { FastifyInstance } from "fastify";
import { parseMultipartStream } from "mixpart";
import { AppError, isAppError } from "../../../errors.js";
import { LIMITS } from "../../../queue/limits.js";
import { boundaryOf, countParts } from "../../encoding/multipart-count.js";
import type { BodyLimits } from "../../encoding/publish-body.js";
import type { PartsLimit } from "../../plugins/rate-limit.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { PUBLISH_BATCH } from "../../openapi/message-routes.js";
import { topicOf } from "../../params.js";
import { publishInput } from "./publish-input.js";

interface Part {
  readonly headers: Record<string, string>;
  readonly payload: Buffer;
}

async function readParts(contentType: string | undefined, body: Buffer): Promise<Part[]> {
  if (!contentType || !/^multipart\/mixed\s*;/i.test(contentType)) {
    throw new AppError("invalid_batch");
  }
  const parts: Part[] = [];
  try {
    const response = new Response(body, { headers: { "content-type": contentType } });
    for await (const part of parseMultipartStream(response)) {
      const payload = Buffer.from(await new Response(part.payload).arrayBuffer());
      parts.push({ headers: Object.fromEntries(part.headers.entries()), payload });
      if (parts.length > LIMITS.batchMaxMessages) throw new AppError("invalid_batch");
    }
  } catch (err) {
    throw isAppError(err) ? err : new AppError("invalid_batch", { cause: err });
  }
  if (parts.length === 0) throw new AppError("invalid_batch");
  // A part the parser did not hand over (it skips parts without headers) must not go missing
  // from a 200 answer: the whole batch is refused and nothing of it stored.
  const boundary = boundaryOf(contentType);
  if (!boundary || countParts(body, boundary) !== parts.length) {
    throw new AppError("invalid_batch", {
      message:
        "A batch's parts could not all be read: give each part at least its Content-Type header.",
    });
  }
  return parts;
}

export function publishBatchRoute(
  app: FastifyInstance,
  queue: QueueService,
  limits: BodyLimits,
  maxBatchBytes: number,
  partsLimit: PartsLimit,
): void {
  app.post(
    "/api/v3/topic/:topic/batch",
    { bodyLimit: maxBatchBytes, schema: PUBLISH_BATCH },
    async (request) => {
      const topic = topicOf(request);
      const parts = await readParts(request.headers["content-type"], request.body as Buffer);
      // The request itself counted for its first part when it came in.
      const allowed = 1 + partsLimit.take(request, parts.length - 1);
      const results = await Promise.all(
        parts.map(async (part, i): Promise<BatchResult> => {
          try {
            if (i >= allowed) throw new AppError("rate_limited", { retryAfterSeconds: 1 });
            if (part.payload.length > limits.maxBytes) throw new AppError("payload_too_large");
            const input = publishInput(part.headers, part.payload);
            // A part above the inline limit goes to the body store like a large single publish
            // (the batch itself is read whole, bounded by VQS_MAX_BATCH_BYTES).
            const result =
              part.payload.length > limits.inlineBytes
                ? await queue.publishStreamed(topic, input, {
                    source: [part.payload],
                    declaredLength: part.payload.length,
                    maxBytes: limits.maxBytes,
                  })
                : await queue.publish(topic, input);
            return result.deferred
              ? { status: "deferred", messageId: null }
              : { status: "sent", messageId: result.messageId };
          } catch (err) {
            const e = isAppError(err) ? err : new AppError("internal_error", { cause: err });
            if (e.status >= 500) request.log.warn({ err }, "batch part failed");
            return {
              status: "failed",
              statusCode: e.status,
              error: e.message,
              retryable: e.status >= 429,
            };
          }
        }),
      );
      return { results } satisfies BatchAnswer;
    },
  );
}

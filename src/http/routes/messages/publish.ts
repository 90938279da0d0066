// SendMessage: POST /api/v3/topic/{topic}. The raw body is the message.
import type { FastifyInstance } from "fastify";
import type { QueueService } from "../../../queue/queue-service.js";
import { DEFAULT_CONTENT_TYPE } from "../../encoding/message-parts.js";
import { PAYLOAD, PUBLISH_HEADERS } from "../../openapi/messages.js";
import { apiHeaders, errorResponses, pathParams, TOPIC_ERRORS } from "../../openapi/shared.js";
import { topicOf } from "../../params.js";
import { publishInput } from "./publish-input.js";

const schema = {
  operationId: "publishMessage",
  summary: "Publish a message",
  description: `The body is the message, with its \`Content-Type\` kept (none: delivered as ${DEFAULT_CONTENT_TYPE}). Larger than the configured maximum: 413.`,
  tags: ["messages"],
  params: pathParams("topic"),
  headers: apiHeaders(PUBLISH_HEADERS),
  body: { content: { "*/*": { schema: PAYLOAD } } },
  response: {
    201: {
      description: "Stored.",
      headers: { "Vqs-Message-Id": { type: "string", description: "The message's ID." } },
      type: "object",
      required: ["messageId"],
      properties: { messageId: { type: "string" } },
    },
    202: {
      description:
        "Deferred during an outage of the region's store: kept by a neighbouring region, stored here once the store is back.",
      type: "object",
      required: ["deferred"],
      properties: { deferred: { const: true } },
    },
    ...errorResponses([
      ...TOPIC_ERRORS,
      "invalid_retention_seconds",
      "invalid_delay_seconds",
      "invalid_idempotency_key",
      "invalid_content_type",
      "topic_limit_reached",
      "payload_too_large",
      "rate_limited",
      "storage_unavailable",
    ]),
  },
};

export function publishRoute(app: FastifyInstance, queue: QueueService): void {
  app.post("/api/v3/topic/:topic", { schema }, async (request, reply) => {
    const topic = topicOf(request);
    const input = publishInput(
      request.headers,
      (request.body as Buffer | undefined) ?? Buffer.alloc(0),
    );
    const result = await queue.publish(topic, input);
    if (result.deferred) return reply.code(202).send({ deferred: true });
    return reply
      .code(201)
      .header("vqs-message-id", result.messageId)
      .send({ messageId: result.messageId });
  });
}

// What receive and receive by ID share: the lease headers they read, and writing the received
// messages in the negotiated format.
import type { FastifyReply, FastifyRequest } from "fastify";
import { LIMITS } from "../../../queue/limits.js";
import type { TopicAddress } from "../../../queue/namespace.js";
import type { QueueService, ReceivedMessage } from "../../../queue/queue-service.js";
import type { ResponseFormat } from "../../encoding/accept.js";
import { LEASE_HEADERS } from "../../../api/messages.js";
import { checkedHeaders } from "../../validation.js";
import { renderMultipart, renderNdjson, type BodyOpener } from "../../encoding/message-parts.js";

/** Vqs-Visibility-Timeout-Seconds and Vqs-Max-Concurrency, checked (400 with their codes). */
export function leaseHeaders(request: FastifyRequest): {
  visibilityTimeoutSeconds: number;
  maxConcurrency: number | null;
} {
  const h = checkedHeaders(request.headers, LEASE_HEADERS);
  return {
    visibilityTimeoutSeconds:
      h["Vqs-Visibility-Timeout-Seconds"] ?? LIMITS.visibilityTimeoutSeconds.default,
    maxConcurrency: h["Vqs-Max-Concurrency"] ?? null,
  };
}

export function sendMessages(
  reply: FastifyReply,
  format: ResponseFormat,
  messages: readonly ReceivedMessage[],
  openBody: BodyOpener,
): FastifyReply {
  const rendered =
    format === "multipart" ? renderMultipart(messages, openBody) : renderNdjson(messages, openBody);
  return reply.code(200).type(rendered.contentType).send(rendered.body);
}

/** Reads the large bodies of messages received from `topic`. */
export function bodiesOf(queue: QueueService, topic: TopicAddress): BodyOpener {
  return (m) => {
    if (!m.body) throw new Error("an inline message has no stored body");
    return queue.openBody(topic, m.body);
  };
}

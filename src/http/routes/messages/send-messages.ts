// What receive and receive by ID share: the lease headers they read, and writing the received
// messages in the negotiated format.
import type { FastifyReply, FastifyRequest } from "fastify";
import { LIMITS } from "../../../queue/limits.js";
import type { TopicAddress } from "../../../queue/namespace.js";
import type { DownloadSlot } from "../../../queue/download-slots.js";
import type { ReceivedMessage } from "../../../queue/delivery/received-message.js";
import type { QueueService } from "../../../queue/queue-service.js";
import type { ResponseFormat } from "../../encoding/accept.js";
import { LEASE_HEADERS } from "../../../api/messages.js";
import { checkedHeaders } from "../../validation.js";
import { renderMultipart, renderNdjson, type BodyOpener } from "../../encoding/message-parts.js";
import type { MinimumRate } from "../../minimum-rate.js";
import { atMinimumRate } from "./download-rate.js";

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

/** Aborts when the connection closes before the answer went out (the client hung up). */
export function hangUp(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableEnded) controller.abort();
  });
  return controller.signal;
}

/**
 * Writes the received messages in `format`. A large body is streamed from the body store as the
 * client reads it, in a download slot of the gateway's (`QueueService.openBody`): one reserved by
 * receive by ID, or one it waits for in turn. A client that goes away frees its place, waiting or
 * not, and a reserved slot whose body is never reached is released when the response closes. A
 * reader slower than the minimum download rate is cut off (download-rate.ts).
 */
export function sendMessages(
  reply: FastifyReply,
  format: ResponseFormat,
  messages: readonly ReceivedMessage[],
  queue: QueueService,
  topic: TopicAddress,
  rate: MinimumRate,
): FastifyReply {
  const openBody = bodiesOf(queue, topic, reply, messages, rate);
  const rendered =
    format === "multipart" ? renderMultipart(messages, openBody) : renderNdjson(messages, openBody);
  return reply.code(200).type(rendered.contentType).send(rendered.body);
}

function bodiesOf(
  queue: QueueService,
  topic: TopicAddress,
  reply: FastifyReply,
  messages: readonly ReceivedMessage[],
  rate: MinimumRate,
): BodyOpener {
  const reserved = new Set<DownloadSlot>();
  for (const m of messages) if (m.downloadSlot) reserved.add(m.downloadSlot);
  if (!messages.some((m) => m.body)) return () => noBody();
  const gone = new AbortController();
  const closed = () => {
    if (!reply.raw.writableEnded) gone.abort();
    for (const slot of reserved) slot.release();
    reserved.clear();
  };
  // A client that left while its messages were being leased: its close came before this.
  if (reply.raw.closed || reply.raw.destroyed) closed();
  else reply.raw.once("close", closed);
  return (m) => {
    const body = m.body;
    if (!body) return noBody();
    const slot = m.downloadSlot;
    // The slot is the download's from its first read on (it releases it however it ends); one
    // never read is the close listener's to release.
    return (async function* () {
      if (slot) reserved.delete(slot);
      const read = queue.openBody(topic, body, {
        slot,
        untilMs: m.visibilityDeadline.getTime(),
        signal: gone.signal,
      });
      yield* atMinimumRate(read, rate, (moved) => {
        reply.log.warn(
          { messageId: m.messageId, moved, ...rate },
          "large body's reader below the minimum download rate: connection closed",
        );
        reply.raw.destroy();
      });
    })();
  };
}

function noBody(): never {
  throw new Error("an inline message has no stored body");
}

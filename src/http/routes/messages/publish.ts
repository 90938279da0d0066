// SendMessage: POST /api/v3/topic/{topic}. The raw body is the message: read into memory up to
// the inline limit, streamed to the body store above it. Everything but the body (auth, names,
// headers, the declared size) is answered before a byte of it is read.
import type { Deferred, Published } from "../../../api/messages.js";
import type { FastifyInstance } from "fastify";
import type { Readable } from "node:stream";
import type { QueueService } from "../../../queue/queue-service.js";
import { readInlineBody } from "../../encoding/inline-body.js";
import {
  abortable,
  declaredLength,
  readPublishBody,
  type BodyLimits,
  type PublishBody,
} from "../../encoding/publish-body.js";
import { refuseUnread } from "../../plugins/linger-close.js";
import { uploadSignal } from "../../plugins/upload-watchdog.js";
import { PUBLISH } from "../../openapi/message-routes.js";
import { topicOf } from "../../params.js";
import { publishInput } from "./publish-input.js";

const EMPTY = Buffer.alloc(0);

/** `app` must hand bodies over unread (a content parser that passes the stream through). */
export function publishRoute(app: FastifyInstance, queue: QueueService, limits: BodyLimits): void {
  app.post("/api/v3/topic/:topic", { schema: PUBLISH }, async (request, reply) => {
    const topic = topicOf(request);
    const input = publishInput(request.headers, EMPTY);
    const stream = request.body as Readable | undefined;
    const signal = uploadSignal(request);
    const declared = declaredLength(request.headers);
    let body: PublishBody;
    try {
      // Most bodies: a declared length within the inline limit, read with the stream's events.
      body =
        stream && declared !== null && declared <= Math.min(limits.inlineBytes, limits.maxBytes)
          ? { kind: "inline", payload: await readInlineBody(stream, declared, signal) }
          : await readPublishBody(
              stream && signal ? abortable(stream, signal) : stream,
              request.headers,
              limits,
            );
    } catch (err) {
      refuseUnread(request, reply);
      throw err;
    }
    let result;
    try {
      result =
        body.kind === "inline"
          ? await queue.publish(topic, { ...input, payload: body.payload })
          : await queue.publishStreamed(topic, input, { ...body, maxBytes: limits.maxBytes });
    } catch (err) {
      // An inline body was read in full: its refusal (a storage quota, say) keeps the
      // connection, which a client refused again and again would otherwise reopen every time.
      // A streamed body's refusal may come before its end.
      if (body.kind !== "inline") refuseUnread(request, reply);
      throw err;
    }
    if (result.deferred) return reply.code(202).send({ deferred: true } satisfies Deferred);
    return reply
      .code(201)
      .header("vqs-message-id", result.messageId)
      .send({ messageId: result.messageId } satisfies Published);
  });
}

// ReceiveMessages: POST /api/v3/topic/{topic}/consumer/{group}: 200 with up to Vqs-Max-Messages
// leased messages, or 204. At once, or with Vqs-Wait-Seconds as soon as one is there (long
// polling); a client that hangs up while waiting leaves nothing leased. Vqs-Cursor-Fallback says
// where a group this receive makes starts.
import type { FastifyInstance } from "fastify";
import { LIMITS } from "../../../queue/limits.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { negotiateFormat } from "../../encoding/accept.js";
import { RECEIVE_HEADERS } from "../../../api/messages.js";
import { checkedHeaders } from "../../validation.js";
import { RECEIVE } from "../../openapi/message-routes.js";
import { groupOf } from "../../params.js";
import type { MinimumRate } from "../../minimum-rate.js";
import { hangUp, leaseHeaders, sendMessages } from "./send-messages.js";

export function receiveRoute(app: FastifyInstance, queue: QueueService, rate: MinimumRate): void {
  app.post("/api/v3/topic/:topic/consumer/:group", { schema: RECEIVE }, async (request, reply) => {
    const group = groupOf(request);
    const format = negotiateFormat(request.headers.accept);
    const h = checkedHeaders(request.headers, RECEIVE_HEADERS);
    const waitSeconds = h["Vqs-Wait-Seconds"] ?? LIMITS.waitSeconds.default;
    const cursorFallback = h["Vqs-Cursor-Fallback"];
    const messages = await queue.receive(group, {
      waitSeconds,
      ...(waitSeconds > 0 ? { signal: hangUp(reply) } : {}),
      maxMessages: h["Vqs-Max-Messages"] ?? LIMITS.maxMessages.default,
      ...(cursorFallback ? { cursorFallback } : {}),
      ...leaseHeaders(request),
    });
    if (messages.length === 0) return reply.code(204).send();
    return sendMessages(reply, format, messages, queue, group, rate);
  });
}

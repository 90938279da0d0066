// ReceiveMessageById: POST /api/v3/topic/{topic}/consumer/{group}/id/{messageId}.
import type { FastifyInstance } from "fastify";
import type { QueueService } from "../../../queue/queue-service.js";
import { negotiateFormat } from "../../encoding/accept.js";
import { RECEIVE_BY_ID } from "../../openapi/message-routes.js";
import { groupOf, param } from "../../params.js";
import type { MinimumRate } from "../../minimum-rate.js";
import { hangUp, leaseHeaders, sendMessages } from "./send-messages.js";

export function receiveByIdRoute(
  app: FastifyInstance,
  queue: QueueService,
  rate: MinimumRate,
): void {
  app.post(
    "/api/v3/topic/:topic/consumer/:group/id/:messageId",
    { schema: RECEIVE_BY_ID },
    async (request, reply) => {
      const group = groupOf(request);
      const format = negotiateFormat(request.headers.accept);
      // A large message waits a little for a download slot: a client gone meanwhile leases none.
      const message = await queue.receiveById(group, param(request, "messageId"), {
        ...leaseHeaders(request),
        signal: hangUp(reply),
      });
      return sendMessages(reply, format, [message], queue, group, rate);
    },
  );
}

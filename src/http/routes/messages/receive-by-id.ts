// ReceiveMessageById: POST /api/v3/topic/{topic}/consumer/{group}/id/{messageId}.
import type { FastifyInstance } from "fastify";
import { LIMITS } from "../../../queue/limits.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { negotiateFormat } from "../../encoding/accept.js";
import { intHeader } from "../../encoding/headers.js";
import { RECEIVE_BY_ID } from "../../openapi/message-routes.js";
import { groupOf, param } from "../../params.js";
import { sendMessages } from "./send-messages.js";

export function receiveByIdRoute(app: FastifyInstance, queue: QueueService): void {
  app.post(
    "/api/v3/topic/:topic/consumer/:group/id/:messageId",
    { schema: RECEIVE_BY_ID },
    async (request, reply) => {
      const group = groupOf(request);
      const format = negotiateFormat(request.headers.accept);
      const h = request.headers;
      const message = await queue.receiveById(group, param(request, "messageId"), {
        visibilityTimeoutSeconds: intHeader(
          h["vqs-visibility-timeout-seconds"],
          LIMITS.visibilityTimeoutSeconds,
          LIMITS.visibilityTimeoutSeconds.default,
          "invalid_visibility_timeout",
        ),
        maxConcurrency: intHeader(
          h["vqs-max-concurrency"],
          LIMITS.maxConcurrency,
          null,
          "invalid_max_concurrency",
        ),
      });
      return sendMessages(reply, format, [message]);
    },
  );
}

// SendMessage: POST /api/v3/topic/{topic}. The raw body is the message.
import type { FastifyInstance } from "fastify";
import type { QueueService } from "../../../queue/queue-service.js";
import { PUBLISH } from "../../openapi/message-routes.js";
import { topicOf } from "../../params.js";
import { publishInput } from "./publish-input.js";

export function publishRoute(app: FastifyInstance, queue: QueueService): void {
  app.post("/api/v3/topic/:topic", { schema: PUBLISH }, async (request, reply) => {
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

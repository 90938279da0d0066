// Acknowledge: DELETE /api/v3/topic/{topic}/consumer/{group}/lease/{receiptHandle} -> 204.
import type { FastifyInstance } from "fastify";
import type { QueueService } from "../../../queue/queue-service.js";
import { ACKNOWLEDGE } from "../../openapi/message-routes.js";
import { groupOf, param } from "../../params.js";

export function acknowledgeRoute(app: FastifyInstance, queue: QueueService): void {
  app.delete(
    "/api/v3/topic/:topic/consumer/:group/lease/:receiptHandle",
    { schema: ACKNOWLEDGE },
    async (request, reply) => {
      await queue.acknowledge(groupOf(request), param(request, "receiptHandle"));
      return reply.code(204).send();
    },
  );
}

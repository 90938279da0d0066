// Extend or release a lease: PATCH .../lease/{receiptHandle}, or POST .../lease/{receiptHandle}/
// visibility for clients that cannot send PATCH. Body {"visibilityTimeoutSeconds": N}; 0 releases.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { CHANGE_VISIBILITY_BODY } from "../../../api/messages.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { changeVisibility } from "../../openapi/message-routes.js";
import { groupOf, param } from "../../params.js";
import { checkedBody } from "../../validation.js";

export function changeVisibilityRoutes(app: FastifyInstance, queue: QueueService): void {
  const handler = async (request: FastifyRequest) => {
    const group = groupOf(request);
    const handle = param(request, "receiptHandle");
    const seconds = checkedBody(request.body, CHANGE_VISIBILITY_BODY).visibilityTimeoutSeconds;
    const deadline = await queue.changeVisibility(group, handle, seconds);
    return { visibilityDeadline: deadline.toISOString() };
  };
  app.patch(
    "/api/v3/topic/:topic/consumer/:group/lease/:receiptHandle",
    { schema: changeVisibility(false) },
    handler,
  );
  app.post(
    "/api/v3/topic/:topic/consumer/:group/lease/:receiptHandle/visibility",
    { schema: changeVisibility(true) },
    handler,
  );
}

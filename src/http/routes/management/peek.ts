// GET /api/v3/topic/{topic}/messages?after=&limit=&payload=: the messages consumer groups see,
// read without leasing them. A full-payload page takes its byte budget (PEEK_PAGE_BYTES) from the
// gateway's share for such pages before it reads, and gives it back once its answer is written:
// past the share, 503 peek_busy with Retry-After, so concurrent full peeks cannot exhaust the heap.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import {
  PEEK_PAGE_BYTES,
  type ManagementService,
} from "../../../queue/management/management-service.js";
import { PEEK } from "../../openapi/management-routes.js";
import { LIMITS } from "../../../queue/limits.js";
import { ByteBudget } from "../../../queue/admission/in-flight/byte-budget.js";
import { peekBusy } from "../../../queue/admission/refusals.js";
import { heapShare } from "../../heap-share.js";

/**
 * Full pages in memory at once: a page's payloads stand about four times in the heap while it is
 * answered (the read buffers, their base64, the JSON text, its bytes), so 1/32 of the heap of
 * payloads is some 1/8 of it at most: 2 pages for the chart's 256 MB heap, and never less than 1.
 */
const fullPeekBytes = () => heapShare(32, PEEK_PAGE_BYTES);

export function peekRoute(app: FastifyInstance, management: ManagementService): void {
  const budget = new ByteBudget(fullPeekBytes());
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get("/api/v3/topic/:topic/messages", { schema: PEEK }, async (request, reply) => {
      const { limit = LIMITS.peekLimit.default, payload, after = null } = request.query;
      const full = payload === "full";
      if (full) {
        if (!budget.tryTake(PEEK_PAGE_BYTES)) throw peekBusy();
        let held = true;
        const release = () => {
          if (held) budget.release(PEEK_PAGE_BYTES);
          held = false;
        };
        // Once the answer (or an error) is written, or the client went away.
        reply.raw.once("close", release);
        try {
          return await management.peek(
            { namespace: request.namespace, topic: request.params.topic },
            after,
            limit,
            true,
          );
        } catch (err) {
          release();
          throw err;
        }
      }
      return management.peek(
        { namespace: request.namespace, topic: request.params.topic },
        after,
        limit,
        false,
      );
    });
}

// The gateway's thread shared fairly among tenants (src/queue/admission/in-flight/fair-share.ts,
// its REQUEST_SHARE bounds). A small publish, a delete and the management routes take a slot of
// their tenant in preParsing, before their body is read, and hold it until their response is
// done. A request without a slot waits there, having cost the thread only its head and its token,
// so a tenant's flood of connections keeps a bounded number of requests at work in the event loop:
// another tenant's request meets at most those ahead of it, not thousands. "Small" is up to
// SMALL_BODY_BYTES, what the request stream buffers by itself: a waiting body has arrived whole,
// and the minimum upload rate is not held back by the wait. Large uploads and batches stream for
// as long as their client sends, so they keep to their own caps (upload slots, the batch budget);
// receives wait on long polls, and their pulls take the store's share; acknowledging and
// extending are never held, as everywhere.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ServerResponse } from "node:http";
import type { FairShare } from "../../queue/admission/in-flight/fair-share.js";
import { tenantKeyOf } from "../../queue/admission/tenant.js";

const TOPIC = "/api/v3/topic/:topic";
/** A readable stream's default high-water mark. */
const SMALL_BODY_BYTES = 16 * 1024;
const MANAGEMENT = new Set([
  "/api/v3/topics",
  "/api/v3/namespaces",
  "/api/v3/topic/:topic/consumers",
  "/api/v3/topic/:topic/messages",
  "/api/v3/topic/:topic/purge",
  "/api/v3/topic/:topic/consumer/:group/seek",
]);

export function installRequestShare(app: FastifyInstance, share: FairShare): void {
  app.addHook("preParsing", async (request, reply) => {
    if (!shared(request)) return;
    await holdUntilDone(share, tenantKeyOf(request.namespace.key), reply.raw);
  });
}

/** A publish of a declared small body, a topic's deletion, or a management route. */
function shared(request: FastifyRequest): boolean {
  const url = request.routeOptions.url ?? "";
  if (url !== TOPIC) return MANAGEMENT.has(url);
  if (request.method !== "POST") return true;
  const length = Number(request.headers["content-length"]);
  return Number.isFinite(length) && length <= SMALL_BODY_BYTES;
}

/**
 * Resolves once the tenant has a slot; the slot is held until the response is done or the client
 * has gone ('close', whichever is first). A client gone while waiting frees its slot as soon as
 * it is granted.
 */
function holdUntilDone(share: FairShare, tenant: string, response: ServerResponse): Promise<void> {
  if (response.closed) return Promise.resolve(); // gone during authentication: nothing to hold
  const done = new Promise<void>((closed) => response.once("close", closed));
  return new Promise<void>((granted) => {
    void share.run(tenant, () => {
      granted();
      return done;
    });
  });
}

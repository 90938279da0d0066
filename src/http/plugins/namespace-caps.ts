// Requests in flight per namespace and per tenant on this gateway
// (VQS_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE): publish, batch publish, receive, receive by ID and
// the management routes (LIMITED_ROUTES) count from authentication (preParsing, before a body is
// read) until their response is done or the client hangs up; past the cap 429
// `too_many_requests_in_flight` with Retry-After. Acknowledging and extending are never counted
// nor refused, as with the rate limit: refusing them would only cause redeliveries.
import type { FastifyInstance } from "fastify";
import type { NamespaceCounts } from "../../queue/admission/in-flight/namespace-counts.js";
import { tooManyRequestsInFlight } from "../../queue/admission/refusals.js";
import { LIMITED_ROUTES } from "./rate-limit.js";

export function installNamespaceCaps(app: FastifyInstance, inFlight: NamespaceCounts): void {
  if (inFlight.cap === 0) return;
  app.addHook("preParsing", async (request, reply) => {
    if (!LIMITED_ROUTES.has(request.routeOptions.url ?? "")) return;
    const ns = request.namespace.key;
    if (!inFlight.take(ns)) throw tooManyRequestsInFlight();
    // The response's 'close' comes once it is sent or the connection is gone, whichever is first;
    // a client gone during authentication had its 'close' already.
    if (reply.raw.closed) inFlight.release(ns);
    else reply.raw.once("close", () => inFlight.release(ns));
  });
}

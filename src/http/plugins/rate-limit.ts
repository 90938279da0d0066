// Per-tenant rate limits on publish and receive, for the region: requests per second
// (@fastify/rate-limit, a one-second window per tenant on each gateway) and request body bytes
// per second. A tenant is the token's team, project and environment; each has its own budget,
// with optional per-team overrides. The budget is regional: each gateway allows its part, in
// proportion to its part of the tenant's demand that the gateways share once a second
// (src/nats/core/demand-exchange.ts). Acknowledging and extending are never limited: refusing
// them would only cause redeliveries. Runs after authentication (preParsing), before a body is
// read, and answers 429 `rate_limited` with Retry-After.
import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AppError } from "../../errors.js";

export interface RateLimitOptions {
  /** Requests per second per tenant in the region; 0 turns the limit off. */
  readonly perSecond: number;
  /** Per-team limits instead of `perSecond`. */
  readonly teams: ReadonlyMap<string, number>;
  /** Request body bytes per second per tenant in the region; 0 turns the limit off. */
  readonly bytesPerSecond: number;
  /** How the region's budget is shared out among its gateways. */
  readonly budget: RegionalBudget;
}

/** Demand counted here and shared with the region's other gateways, and this gateway's part. */
export interface RegionalBudget {
  note(tenant: string, kind: "requests" | "bytes", amount: number): void;
  share(tenant: string, kind: "requests" | "bytes", limit: number): number;
}

/** The routes tenant limits apply to (the rate limit, and requests in flight per namespace). */
export const LIMITED_ROUTES = new Set([
  "/api/v3/topic/:topic",
  "/api/v3/topic/:topic/batch",
  "/api/v3/topic/:topic/consumer/:group",
  "/api/v3/topic/:topic/consumer/:group/id/:messageId",
]);

/** Tenants remembered at once (least recently used forgotten first). */
const MAX_TENANTS = 100_000;

const tenantOf = (req: FastifyRequest) => {
  const ns = req.namespace;
  return JSON.stringify([ns.team, ns.project, ns.environment]);
};

export async function installRateLimit(
  app: FastifyInstance,
  opts: RateLimitOptions,
): Promise<void> {
  installByteLimit(app, opts);
  if (opts.perSecond === 0 && opts.teams.size === 0) return;
  // Demand is counted before the limit decides, refused requests included: a gateway whose
  // share is too small for what it is asked shows it, and gets more next second.
  app.addHook("preParsing", (req, _reply, _payload, done) => {
    if (LIMITED_ROUTES.has(req.routeOptions.url ?? "")) {
      opts.budget.note(tenantOf(req), "requests", 1);
    }
    done();
  });
  await app.register(rateLimit, {
    global: true,
    hook: "preParsing",
    timeWindow: 1000,
    cache: MAX_TENANTS,
    keyGenerator: tenantOf,
    max: (req: FastifyRequest, tenant: string) =>
      opts.budget.share(tenant, "requests", opts.teams.get(req.namespace.team) ?? opts.perSecond),
    allowList: (req: FastifyRequest) =>
      !LIMITED_ROUTES.has(req.routeOptions.url ?? "") ||
      (opts.teams.get(req.namespace.team) ?? opts.perSecond) === 0,
    errorResponseBuilder: (_req, context) =>
      new AppError("rate_limited", {
        retryAfterSeconds: Math.max(1, Math.ceil(context.ttl / 1000)),
      }),
  });
}

/**
 * Body bytes per second per tenant (by Content-Length, before the body is read; a body without
 * one is bounded by the body limit and counted at that), a fixed one-second window per tenant.
 */
function installByteLimit(app: FastifyInstance, opts: RateLimitOptions): void {
  if (opts.bytesPerSecond === 0) return;
  let window = Math.floor(Date.now() / 1000);
  let used = new Map<string, number>();
  app.addHook("preParsing", (req, _reply, _payload, done) => {
    if (!LIMITED_ROUTES.has(req.routeOptions.url ?? "") || req.method !== "POST") return done();
    const bytes = Number(req.headers["content-length"] ?? 0) || 0;
    if (bytes === 0) return done();
    const now = Math.floor(Date.now() / 1000);
    if (now !== window || used.size > MAX_TENANTS) {
      window = now;
      used = new Map();
    }
    const tenant = tenantOf(req);
    opts.budget.note(tenant, "bytes", bytes);
    const spent = used.get(tenant) ?? 0;
    if (spent > 0 && spent + bytes > opts.budget.share(tenant, "bytes", opts.bytesPerSecond)) {
      return done(new AppError("rate_limited", { retryAfterSeconds: 1 }));
    }
    used.set(tenant, spent + bytes);
    done();
  });
}

// Per-tenant rate limit on publish and receive (@fastify/rate-limit, in-memory, per gateway).
// A tenant is the token's team, project and environment; each has its own window of requests
// per second, with optional per-team overrides. Acknowledging and extending are never limited:
// refusing them would only cause redeliveries. Runs after authentication (preParsing), before
// a body is read, and answers 429 `rate_limited` with Retry-After.
import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AppError } from "../../errors.js";

export interface RateLimitOptions {
  /** Requests per second per tenant on this gateway; 0 turns the limit off. */
  readonly perSecond: number;
  /** Per-team limits instead of `perSecond`. */
  readonly teams: ReadonlyMap<string, number>;
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

export async function installRateLimit(
  app: FastifyInstance,
  opts: RateLimitOptions,
): Promise<void> {
  if (opts.perSecond === 0 && opts.teams.size === 0) return;
  await app.register(rateLimit, {
    global: true,
    hook: "preParsing",
    timeWindow: 1000,
    cache: MAX_TENANTS,
    keyGenerator: (req: FastifyRequest) => {
      const ns = req.namespace;
      return JSON.stringify([ns.team, ns.project, ns.environment]);
    },
    max: (req: FastifyRequest) => opts.teams.get(req.namespace.team) ?? opts.perSecond,
    allowList: (req: FastifyRequest) =>
      !LIMITED_ROUTES.has(req.routeOptions.url ?? "") ||
      (opts.teams.get(req.namespace.team) ?? opts.perSecond) === 0,
    errorResponseBuilder: (_req, context) =>
      new AppError("rate_limited", {
        retryAfterSeconds: Math.max(1, Math.ceil(context.ttl / 1000)),
      }),
  });
}

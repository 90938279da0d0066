// Per-tenant rate limits on publish and receive, for the region: requests per second (a
// one-second window per tenant on each gateway, tenant-windows.ts) and request body bytes per
// second. A tenant is the token's team, project and environment; each has its own budget, with
// optional per-team overrides. The budget is regional: each gateway allows its part, in
// proportion to its part of the tenant's demand that the gateways share once a second
// (src/nats/core/demand-exchange.ts). Acknowledging and extending are never limited: refusing
// them would only cause redeliveries. Runs right after authentication (preParsing), before a body
// is read (a chunked body is also counted as it arrives), and answers 429 `rate_limited` with
// Retry-After. A batch counts one request per part: the request itself here, its further parts
// once the batch is read (`PartsLimit`); parts beyond the budget fail alone with 429.
//
// A refusal is the cheapest answer the gateway gives (a flooding tenant's refusals are most of
// what it costs): one synchronous hook, a map lookup, and a body serialized once at start-up. A
// tenant that sends again on the same connection at once after its 429 has that request held
// for a moment before it is decided (`holdMs`), so that a client ignoring Retry-After costs a
// refusal per connection per hold rather than as many as it can send.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Socket } from "node:net";
import { Readable } from "node:stream";
import { ERRORS, type AppError } from "../../errors.js";
import { TenantByteBuckets } from "../../queue/admission/rates/tenant-byte-buckets.js";
import { TenantWindows } from "../../queue/admission/rates/tenant-windows.js";

export interface RateLimitOptions {
  /** Requests per second per tenant in the region; 0 turns the limit off. */
  readonly perSecond: number;
  /** Per-team limits instead of `perSecond`. */
  readonly teams: ReadonlyMap<string, number>;
  /** Request body bytes per second per tenant in the region; 0 turns the limit off. */
  readonly bytesPerSecond: number;
  /**
   * How long a tenant's request is held before it is decided when it comes on a connection that
   * answered the same tenant 429 `rate_limited` and before that answer's Retry-After (0: never).
   */
  readonly holdMs: number;
  /** How the region's budget is shared out among its gateways. */
  readonly budget: RegionalBudget;
  /** Counts a refusal by the request limit (the error handler counts the others). */
  readonly onRefused: () => void;
  /** The clock the windows and byte buckets run on (the gateway's local clock). */
  readonly now?: () => number;
}

/** Demand counted here and shared with the region's other gateways, and this gateway's part. */
export interface RegionalBudget {
  note(tenant: string, kind: "requests" | "bytes", amount: number): void;
  share(tenant: string, kind: "requests" | "bytes", limit: number): number;
}

/**
 * The routes tenant limits apply to (the rate limit, and requests in flight per namespace and
 * tenant): publishing, receiving, and the management routes, whose listings and peeks cost the
 * store and the gateway's memory as much (`/api/v3/topic/:topic` and `.../consumer/:group` also
 * serve a topic's description, its deletion and a group's).
 */
export const LIMITED_ROUTES = new Set([
  "/api/v3/topic/:topic",
  "/api/v3/topic/:topic/batch",
  "/api/v3/topic/:topic/consumer/:group",
  "/api/v3/topic/:topic/consumer/:group/id/:messageId",
  "/api/v3/topics",
  "/api/v3/namespaces",
  "/api/v3/topic/:topic/consumers",
  "/api/v3/topic/:topic/messages",
  "/api/v3/topic/:topic/purge",
  "/api/v3/topic/:topic/consumer/:group/seek",
]);

/** Tenants remembered at once (least recently used forgotten first). */
const MAX_TENANTS = 100_000;
const WINDOW_MS = 1000;

/** A batch's parts after its first, counted in the tenant's request budget once it is read. */
export interface PartsLimit {
  /** How many of a batch's `n` further parts the tenant's budget takes now (0 to n). */
  take(req: FastifyRequest, n: number): number;
}

const tenantOf = (req: FastifyRequest) => {
  const ns = req.namespace;
  return JSON.stringify([ns.team, ns.project, ns.environment]);
};

/** The refusal's body, the error handler's shape, serialized once. */
const REFUSAL = Buffer.from(
  JSON.stringify({ error: { code: "rate_limited", message: ERRORS.rate_limited.message } }),
);

/** The tenant a connection last refused, and until when (its answer's Retry-After). */
interface Refused {
  readonly tenant: string;
  readonly untilMs: number;
}

export function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): PartsLimit {
  const limited = (req: FastifyRequest) => LIMITED_ROUTES.has(req.routeOptions.url ?? "");
  const limitOf = (req: FastifyRequest) => opts.teams.get(req.namespace.team) ?? opts.perSecond;
  const now = opts.now ?? Date.now;
  const windows = new TenantWindows(MAX_TENANTS, now);
  if (opts.perSecond !== 0 || opts.teams.size !== 0) {
    const refusedOn = new WeakMap<Socket, Refused>();
    /** Counts the request in its tenant's window; answers 429 when the window is full. */
    const decide = (req: FastifyRequest, reply: FastifyReply, tenant: string, limit: number) => {
      const share = opts.budget.share(tenant, "requests", limit);
      const retryAfterSeconds = windows.admit(tenant, share, WINDOW_MS);
      const socket = req.raw.socket as Socket | null;
      if (retryAfterSeconds === null) {
        if (socket) refusedOn.delete(socket);
        return false;
      }
      if (socket) refusedOn.set(socket, { tenant, untilMs: now() + retryAfterSeconds * 1000 });
      opts.onRefused();
      void reply
        .code(429)
        .header("retry-after", String(retryAfterSeconds))
        .type("application/json; charset=utf-8")
        .send(REFUSAL);
      return true;
    };
    app.addHook("preParsing", (req, reply, _payload, done) => {
      if (!limited(req)) return done();
      const limit = limitOf(req);
      if (limit === 0) return done();
      const tenant = tenantOf(req);
      // Demand is counted before the limit decides, refused requests included: a gateway whose
      // share is too small for what it is asked shows it, and gets more next second.
      opts.budget.note(tenant, "requests", 1);
      const socket = req.raw.socket as Socket | null;
      const last = socket ? refusedOn.get(socket) : undefined;
      const holdMs =
        last && last.tenant === tenant ? Math.min(opts.holdMs, last.untilMs - now()) : 0;
      if (holdMs <= 0) {
        if (!decide(req, reply, tenant, limit)) done();
        return;
      }
      // Held: decided once the hold is over (the tenant's window may have room again by then).
      setTimeout(() => {
        if (!decide(req, reply, tenant, limit)) done();
      }, holdMs).unref();
    });
  }
  installByteLimit(app, opts);
  if (opts.perSecond === 0 && opts.teams.size === 0) return { take: (_req, n) => n };
  return {
    take: (req, n) => {
      const limit = limitOf(req);
      if (limit === 0 || n <= 0) return n;
      const tenant = tenantOf(req);
      opts.budget.note(tenant, "requests", n);
      return windows.take(tenant, n, opts.budget.share(tenant, "requests", limit), WINDOW_MS);
    },
  };
}

/**
 * Body bytes per second per tenant, a bucket per tenant that empties at the tenant's share of the
 * regional budget per second and holds one second's share. A declared body (Content-Length) is
 * judged before it is read: taken when it fits, or when the bucket is empty (a body larger than a
 * second's budget then holds the tenant's next requests back until its bytes have drained).
 * A body without one (chunked; a large upload) is counted piece by piece as it arrives, by the
 * same rule, and cut off with the same 429 once a piece finds no room: it may not outrun the
 * budget (the publish then stores nothing of it).
 */
function installByteLimit(app: FastifyInstance, opts: RateLimitOptions): void {
  if (opts.bytesPerSecond === 0) return;
  const buckets = new TenantByteBuckets(MAX_TENANTS, opts.now ?? Date.now);
  /** Takes `bytes` for the tenant, or answers the refusal (Retry-After: until it has drained). */
  const take = (tenant: string, bytes: number): AppError | null => {
    opts.budget.note(tenant, "bytes", bytes);
    return buckets.take(tenant, bytes, opts.budget.share(tenant, "bytes", opts.bytesPerSecond));
  };
  app.addHook("preParsing", (req, _reply, payload, done) => {
    if (!LIMITED_ROUTES.has(req.routeOptions.url ?? "") || req.method !== "POST") return done();
    const tenant = tenantOf(req);
    if (req.headers["transfer-encoding"] === undefined) {
      const bytes = Number(req.headers["content-length"] ?? 0) || 0;
      if (bytes === 0) return done();
      return done(take(tenant, bytes) ?? undefined);
    }
    // Refused before a byte is read when the bucket has no room left at all.
    const refused = take(tenant, 0);
    if (refused) return done(refused);
    done(
      null,
      metered(payload, (n) => take(tenant, n)),
    );
  });
}

/**
 * The request body, each piece judged by `take` before it is passed on: a refusal fails the
 * stream with it. The request is read piece by piece and never destroyed, so the refusal can
 * still be answered (the route closes the connection, the rest is not read).
 */
function metered(payload: Readable, take: (n: number) => AppError | null): Readable {
  const pieces = payload[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  return Readable.from(
    (async function* () {
      for (;;) {
        const r = await pieces.next();
        if (r.done) return;
        const refused = take(r.value.length);
        if (refused) throw refused;
        yield r.value;
      }
    })(),
    { objectMode: false },
  );
}

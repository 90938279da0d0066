// The message routes through Fastify's inject, over the domain on the in-memory storage ports: the
// real app (buildApp), real token verification (the test issuer's JWKS on loopback), no
// nats-server. What each route answers and refuses; the same routes against JetStream:
// test/integration/messages/api.test.ts and bad-input.test.ts.
import type { FastifyInstance } from "fastify";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, type AppDeps } from "../../src/app.js";
import { NamespaceCounts } from "../../src/queue/admission/in-flight/namespace-counts.js";
import { createTokenVerifier, remoteKeySet } from "../../src/auth/token-verifier.js";
import { createLogger } from "../../src/logger.js";
import { createMetrics } from "../../src/metrics.js";
import { AUDIENCE, ISSUER, startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { memoryQueue } from "../helpers/memory-queue.js";

/** Services these routes never reach. */
const UNUSED = new Proxy(
  {},
  {
    get: (_target, key) => {
      throw new Error(`message routes test: ${String(key)} used`);
    },
  },
);

let issuer: TestIssuer;
let app: FastifyInstance;
let token: string;

beforeAll(async () => {
  issuer = await startIssuer();
  token = await issuer.token();
  const logger = createLogger("silent");
  const deps = {
    config: {
      allowedTeams: null,
      allowedProjects: null,
      allowedEnvironments: null,
      operatorTeams: new Set<string>(),
      rateLimitPerSecond: 0,
      rateLimitTeams: new Map<string, number>(),
      rateLimitBytesPerSecond: 0,
      rateLimitHoldMs: 0,
    },
    queue: memoryQueue().queue,
    settings: UNUSED,
    management: UNUSED,
    audit: UNUSED,
    pushKeys: () => ({ keys: [] }),
    verifier: createTokenVerifier({
      keys: remoteKeySet(issuer.jwksUrl),
      issuers: [ISSUER],
      audiences: [AUDIENCE],
      claims: { team: "owner_id", project: "project_id", environment: "environment" },
      clockToleranceSeconds: 5,
      now: Date.now,
    }),
    now: Date.now,
    isReady: () => Promise.resolve(true),
    isDraining: () => false,
    logger,
    metrics: createMetrics(new Registry(), { groupStatsRefreshMs: 60_000 }),
    // A gateway alone in its region: its share of a budget is the whole budget.
    budget: {
      note: () => undefined,
      share: (_tenant: string, _kind: string, limit: number) => limit,
    },
    requestsInFlight: new NamespaceCounts(0),
    maxMessageBytes: 1024,
    inlineBodyBytes: 1024,
    uploadRate: { minBytesPerSecond: 64 * 1024, windowMs: 60_000 },
    downloadRate: { minBytesPerSecond: 64 * 1024, windowMs: 60_000 },
    maxBatchBytes: 16 * 1024,
    console: null,
  } as unknown as AppDeps;
  app = await buildApp(deps);
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await issuer?.close();
});

const auth = () => ({ authorization: `Bearer ${token}` });
const errorCode = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

describe("message routes (inject, in-memory ports)", () => {
  it("publishes, receives as NDJSON, acknowledges, and then has nothing", async () => {
    const published = await app.inject({
      method: "POST",
      url: "/api/v3/topic/orders",
      headers: { ...auth(), "content-type": "application/json" },
      payload: '{"id":1}',
    });
    expect(published.statusCode).toBe(201);
    const { messageId } = published.json<{ messageId: string }>();
    expect(published.headers["vqs-message-id"]).toBe(messageId);

    const received = await app.inject({
      method: "POST",
      url: "/api/v3/topic/orders/consumer/billing",
      headers: { ...auth(), accept: "application/x-ndjson" },
    });
    expect(received.statusCode).toBe(200);
    const line = JSON.parse(received.body.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ messageId, deliveryCount: 1, contentType: "application/json" });
    expect(Buffer.from(line.body as string, "base64").toString()).toBe('{"id":1}');

    const handle = encodeURIComponent(line.receiptHandle as string);
    const acked = await app.inject({
      method: "DELETE",
      url: `/api/v3/topic/orders/consumer/billing/lease/${handle}`,
      headers: auth(),
    });
    expect(acked.statusCode).toBe(204);
    const empty = await app.inject({
      method: "POST",
      url: "/api/v3/topic/orders/consumer/billing",
      headers: { ...auth(), accept: "application/x-ndjson" },
    });
    expect(empty.statusCode).toBe(204);
  });

  it("refuses what it cannot take with a 4xx and a stable code", async () => {
    const cases = [
      { method: "POST", url: "/api/v3/topic/orders", headers: {}, code: "missing_token" },
      {
        method: "POST",
        url: "/api/v3/topic/bad%20name",
        headers: auth(),
        code: "invalid_topic_name",
      },
      {
        method: "POST",
        url: "/api/v3/topic/orders",
        headers: { ...auth(), "vqs-retention-seconds": "5" },
        code: "invalid_retention_seconds",
      },
      {
        method: "POST",
        url: "/api/v3/topic/orders/consumer/billing",
        headers: { ...auth(), accept: "text/html" },
        code: "unsupported_accept",
      },
      {
        method: "DELETE",
        url: "/api/v3/topic/orders/consumer/billing/lease/not-a-handle",
        headers: auth(),
        code: "invalid_receipt_handle",
      },
    ] as const;
    for (const c of cases) {
      const r = await app.inject({ method: c.method, url: c.url, headers: c.headers });
      expect([r.statusCode, errorCode(r.body)], c.code).toEqual([
        c.code === "missing_token" ? 401 : 400,
        c.code,
      ]);
    }
    const big = await app.inject({
      method: "POST",
      url: "/api/v3/topic/orders",
      headers: { ...auth(), "content-type": "application/octet-stream" },
      payload: Buffer.alloc(2048),
    });
    expect([big.statusCode, errorCode(big.body)]).toEqual([413, "payload_too_large"]);
  });
});

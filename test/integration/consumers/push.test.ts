// Push delivery end to end: settings stored through the API, messages sent with the real client,
// pushed by the gateway to a real HTTP app whose routes are the real client's handleCallback and
// handleNodeCallback (and plain webhooks), settled through the API by the client.
import { jwtVerify, createRemoteJWKSet } from "jose";
import { propagation, type TextMapPropagator } from "@opentelemetry/api";
import { QueueClient } from "@vercel/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, sleep, uniqueName } from "../../helpers/http.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";

const INLINE_LIMIT = 2048;
const fx = useGateways(1, { config: { pushInlineLimitBytes: INLINE_LIMIT } });
let app: PushApp;
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
});

afterAll(async () => {
  await app?.close();
});

function sender(): QueueClient {
  return new QueueClient({
    region: "iad1",
    token,
    deploymentId: null,
    resolveBaseUrl: () => new URL(fx.gateways[0]!.url),
  });
}

async function settings(topic: string, group: string, body: unknown): Promise<void> {
  const res = await api(fx.gateways[0]!.url, token).call(
    "PUT",
    `${topic}/consumer/${group}/settings`,
    { headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Resolves with what `seen` collected once `until` holds (or fails after `ms`). */
async function waitFor<T>(seen: () => T, until: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = seen();
    if (until(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

describe("push delivery with the real client", () => {
  it("pushes JSON to handleCallback with its metadata, and the client's ack settles it", async () => {
    const topic = uniqueName("push-json");
    const got: { payload: unknown; meta: Record<string, unknown> }[] = [];
    const url = app.fetchRoute(topic, {
      handler: (payload, meta) => void got.push({ payload, meta: { ...meta } }),
    });
    await settings(topic, "workers", { push: { url } });
    const { messageId } = await sender().send(topic, { order: 1, items: ["a"] });
    const [first] = await waitFor(
      () => got,
      (g) => g.length === 1,
    );
    expect(first!.payload).toEqual({ order: 1, items: ["a"] });
    expect(first!.meta).toMatchObject({
      messageId,
      deliveryCount: 1,
      topicName: topic,
      consumerGroup: "workers",
    });
    expect(first!.meta.createdAt).toBeInstanceOf(Date);
    expect(first!.meta.expiresAt).toBeInstanceOf(Date);
    // Acknowledged through the API by the client: the group has processed it.
    await waitFor(
      async () =>
        (await api(fx.gateways[0]!.url, token).receiveById(topic, "workers", messageId!)).status,
      () => true,
    );
    await expect
      .poll(
        async () =>
          (await api(fx.gateways[0]!.url, token).receiveById(topic, "workers", messageId!)).status,
        {
          timeout: 5000,
        },
      )
      .toBe(410);
    const req = app.requests.find((r) => r.path.endsWith(topic))!;
    expect(req.headers).toMatchObject({
      "ce-specversion": "1.0",
      "ce-type": "com.vercel.queue.v2beta",
      "ce-vqsqueuename": topic,
      "ce-vqsconsumergroup": "workers",
      "ce-vqsmessageid": messageId,
      "ce-vqsregion": "iad1",
      "content-type": "application/json",
    });
    // The push is signed by the service: the app can check it with the published keys.
    const jwt = req.headers.authorization!.replace(/^Bearer /, "");
    const jwks = createRemoteJWKSet(new URL(`${fx.gateways[0]!.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(jwt, jwks, { audience: url, issuer: "urn:vqs:iad1" });
    expect(payload.sub).toBe(`team_a/prj_1/production//${topic}/workers`);
  });

  it("pushes bytes to handleNodeCallback with the Buffer transport", async () => {
    const topic = uniqueName("push-node");
    const got: Buffer[] = [];
    const url = app.nodeRoute(topic, {
      transport: "buffer",
      handler: (payload) => void got.push(payload as Buffer),
    });
    await settings(topic, "workers", { push: { url } });
    const bytes = Buffer.from([0, 1, 2, 255, 13, 10, 45, 45]);
    const res = await api(fx.gateways[0]!.url, token).publish(topic, bytes, {
      "content-type": "application/octet-stream",
    });
    expect(res.status).toBe(201);
    await waitFor(
      () => got,
      (g) => g.length === 1,
    );
    expect(Buffer.compare(got[0]!, bytes)).toBe(0);
  });

  it("redelivers after a retry directive {afterSeconds: 1} with deliveryCount 2", async () => {
    const topic = uniqueName("push-retry");
    const seen: { count: number; at: number }[] = [];
    const url = app.fetchRoute(topic, {
      handler: (_p, meta) => {
        seen.push({ count: meta.deliveryCount, at: Date.now() });
        if (meta.deliveryCount === 1) throw new Error("not yet");
      },
      options: { retry: () => ({ afterSeconds: 1 }) },
    });
    await settings(topic, "workers", { push: { url }, retry: { afterSeconds: 30 } });
    await sender().send(topic, { n: 1 });
    await waitFor(
      () => seen,
      (s) => s.length === 2,
    );
    expect(seen.map((s) => s.count)).toEqual([1, 2]);
    const gap = seen[1]!.at - seen[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(900);
    expect(gap).toBeLessThan(5000);
  });

  it("retries after retry.afterSeconds when the handler throws without a directive", async () => {
    const topic = uniqueName("push-throw");
    const seen: number[] = [];
    const url = app.fetchRoute(topic, {
      handler: (_p, meta) => {
        seen.push(meta.deliveryCount);
        if (meta.deliveryCount < 3) throw new Error("failing");
      },
    });
    await settings(topic, "workers", { push: { url }, retry: { afterSeconds: 1 } });
    await sender().send(topic, { n: 1 });
    await waitFor(
      () => seen,
      (s) => s.length === 3,
    );
    expect(seen).toEqual([1, 2, 3]);
  });

  it("pushes a payload above the inline limit without body, and the client leases it by ID", async () => {
    const topic = uniqueName("push-large");
    const got: unknown[] = [];
    const url = app.fetchRoute(topic, { handler: (payload) => void got.push(payload) });
    await settings(topic, "workers", { push: { url } });
    const big = { text: "x".repeat(INLINE_LIMIT * 2) };
    const { messageId } = await sender().send(topic, big);
    await waitFor(
      () => got,
      (g) => g.length === 1,
      20_000,
    );
    expect(got[0]).toEqual(big);
    const req = app.requests.find((r) => r.path.endsWith(topic))!;
    expect(req.headers["ce-vqsreceipthandle"]).toBeUndefined();
    expect(req.body.length).toBe(0);
    await expect
      .poll(
        async () =>
          (await api(fx.gateways[0]!.url, token).receiveById(topic, "workers", messageId!)).status,
        {
          timeout: 5000,
        },
      )
      .toBe(410);
  });

  it("carries the publish's traceparent to the handler", async () => {
    const topic = uniqueName("push-trace");
    const url = app.hookRoute(topic, 200);
    await settings(topic, "workers", { push: { url, autoAck: true } });
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await api(fx.gateways[0]!.url, token).publish(topic, "traced", {
      traceparent,
      tracestate: "vendor=abc",
    });
    const req = await waitFor(
      () => app.requests.find((r) => r.path.endsWith(topic)),
      (r) => r !== undefined,
    );
    expect(req!.headers["x-vercel-queue-traceparent"]).toBe(traceparent);
    expect(req!.headers["x-vercel-queue-tracestate"]).toBe("vendor=abc");
  });

  it("pushes a message's own headers, and a batch's trace context to each part without one", async () => {
    const topic = uniqueName("push-headers");
    const got: unknown[] = [];
    const url = app.fetchRoute(topic, { handler: (payload) => void got.push(payload) });
    await settings(topic, "workers", { push: { url } });
    await sender().send(topic, { n: 1 }, { headers: { "X-Tenant": "acme", "Run-Id": "r1" } });
    // The client injects trace context with OpenTelemetry when an app registers a propagator;
    // on a batch it puts it on the request, not on the parts.
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const fixed: TextMapPropagator = {
      inject: (_ctx, carrier, setter) => setter.set(carrier, "traceparent", traceparent),
      extract: (ctx) => ctx,
      fields: () => ["traceparent"],
    };
    propagation.setGlobalPropagator(fixed);
    let results;
    try {
      results = await sender().experimental_sendBatch(topic, [
        { payload: { n: 2 }, headers: { "x-part": "2" } },
        { payload: { n: 3 } },
      ]);
    } finally {
      propagation.disable();
    }
    expect(results.map((r) => r.status)).toEqual(["sent", "sent"]);
    await waitFor(
      () => got.length,
      (n) => n >= 3,
    );
    const pushed = (n: number) =>
      app.requests.find(
        (r) => r.path.endsWith(topic) && r.body.toString() === JSON.stringify({ n }),
      )!.headers;
    expect(pushed(1)).toMatchObject({ "x-tenant": "acme", "run-id": "r1" });
    expect(pushed(1)).not.toHaveProperty("x-vercel-queue-traceparent");
    expect(pushed(2)).toMatchObject({ "x-part": "2", "x-vercel-queue-traceparent": traceparent });
    expect(pushed(3)).toMatchObject({ "x-vercel-queue-traceparent": traceparent });
    expect(pushed(3)).not.toHaveProperty("x-part");
    // Nothing of the publish's own request (its User-Agent, Vqs-Client-Ts) is pushed.
    expect(pushed(1)["user-agent"] ?? "").not.toMatch(/@vercel\/queue/);
    expect(pushed(1)).not.toHaveProperty("vqs-client-ts");
  });

  it("acknowledges on a 2xx with autoAck, and retries a 500", async () => {
    const topic = uniqueName("push-hook");
    let calls = 0;
    const url = app.hookRoute(topic, () => (++calls === 1 ? 500 : 204));
    await settings(topic, "workers", { push: { url, autoAck: true }, retry: { afterSeconds: 1 } });
    const res = await api(fx.gateways[0]!.url, token).publish(topic, "hook");
    const { messageId } = (await res.json()) as { messageId: string };
    await waitFor(
      () => calls,
      (c) => c === 2,
    );
    const counts = app.requests
      .filter((r) => r.path.endsWith(topic))
      .map((r) => r.headers["ce-vqsdeliverycount"]);
    expect(counts).toEqual(["1", "2"]);
    await expect
      .poll(
        async () =>
          (await api(fx.gateways[0]!.url, token).receiveById(topic, "workers", messageId)).status,
        {
          timeout: 5000,
        },
      )
      .toBe(410);
  });
});

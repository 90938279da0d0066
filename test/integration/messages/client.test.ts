// The public client, @vercel/queue 0.6.0, unchanged, pointed at a real gateway with
// resolveBaseUrl and token: what a team running this service does.
import { BufferTransport, PollingQueueClient } from "@vercel/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { eventually } from "../../helpers/wait.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;
let token: string;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer);
  token = await issuer.token();
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

function client(options: { transport?: BufferTransport; deploymentId?: string | null } = {}) {
  return new PollingQueueClient({
    region: "iad1",
    token,
    deploymentId: options.deploymentId ?? null,
    resolveBaseUrl: () => new URL(gw.url),
    ...(options.transport ? { transport: options.transport } : {}),
  });
}

interface Seen {
  payload: unknown;
  messageId: string;
  deliveryCount: number;
  createdAt: Date;
  expiresAt: Date;
}

async function drain(
  q: PollingQueueClient,
  topic: string,
  group: string,
  limit = 10,
): Promise<Seen[]> {
  const seen: Seen[] = [];
  const r = await q.receive(
    topic,
    group,
    (payload, meta) => {
      seen.push({ payload, ...meta });
    },
    { limit },
  );
  expect(r.ok || seen.length === 0).toBe(true);
  return seen;
}

describe("@vercel/queue PollingQueueClient against the gateway", () => {
  it("sends and receives JSON (JsonTransport), acknowledging on success", async () => {
    const q = client();
    const topic = uniqueName("orders");
    const { messageId } = await q.send(topic, { orderId: 42, items: ["a", "b"] });
    expect(typeof messageId).toBe("string");
    const seen = await drain(q, topic, "fulfil");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      payload: { orderId: 42, items: ["a", "b"] },
      messageId,
      deliveryCount: 1,
    });
    expect(seen[0]!.expiresAt.getTime() - seen[0]!.createdAt.getTime()).toBe(86_400_000);
    // Acknowledged by the client: nothing is left.
    expect(await drain(q, topic, "fulfil")).toEqual([]);
  });

  it("sends and receives raw bytes (BufferTransport)", async () => {
    const q = client({ transport: new BufferTransport() });
    const topic = uniqueName("blobs");
    const bytes = Buffer.from([0, 1, 2, 13, 10, 255, 254, 45, 45]);
    await q.send(topic, bytes, { retentionSeconds: 120 });
    const seen = await drain(q, topic, "g");
    expect(Buffer.isBuffer(seen[0]!.payload)).toBe(true);
    expect((seen[0]!.payload as Buffer).equals(bytes)).toBe(true);
    expect(seen[0]!.expiresAt.getTime() - seen[0]!.createdAt.getTime()).toBe(120_000);
  });

  it("receives up to `limit` messages per call", async () => {
    const q = client();
    const topic = uniqueName("many");
    for (let i = 0; i < 7; i++) await q.send(topic, { i });
    const first = await drain(q, topic, "g", 5);
    expect(first.map((s) => (s.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
    const rest = await drain(q, topic, "g", 5);
    expect(rest.map((s) => (s.payload as { i: number }).i)).toEqual([5, 6]);
  });

  it("receives a message by its messageId, and reports it processed afterwards", async () => {
    const q = client();
    const topic = uniqueName("byid");
    await q.send(topic, { n: 1 });
    const { messageId } = await q.send(topic, { n: 2 });
    const seen: Seen[] = [];
    const r = await q.receive(topic, "g", (payload, meta) => void seen.push({ payload, ...meta }), {
      messageId: messageId!,
    });
    expect(r.ok).toBe(true);
    expect(seen).toEqual([
      expect.objectContaining({ payload: { n: 2 }, messageId, deliveryCount: 1 }),
    ]);
    const again = await q.receive(topic, "g", () => undefined, { messageId: messageId! });
    expect(again).toEqual({ ok: false, reason: "already_processed", messageId });
    const unknown = await q.receive(topic, "g", () => undefined, {
      messageId: "m999_AAAAAAAAAAAAAAAA",
    });
    expect(unknown).toMatchObject({ ok: false, reason: "not_found" });
    // The ordinary receive never hands the acknowledged message out again.
    expect((await drain(q, topic, "g")).map((s) => s.payload)).toEqual([{ n: 1 }]);
  });

  it("redelivers after a retry directive {afterSeconds: 1} with deliveryCount 2", async () => {
    const q = client();
    const topic = uniqueName("retry");
    const { messageId } = await q.send(topic, { job: "flaky" });
    const attempts: number[] = [];
    const handler = (_payload: unknown, meta: { deliveryCount: number }) => {
      attempts.push(meta.deliveryCount);
      if (meta.deliveryCount === 1) throw new Error("transient");
    };
    const first = await q.receive(topic, "workers", handler, {
      retry: () => ({ afterSeconds: 1 }),
    });
    expect(first.ok).toBe(true);
    expect(await drain(q, topic, "workers")).toEqual([]);
    // Back after the retry's 1 s.
    const seen: Seen[] = [];
    const back = async () => {
      await q.receive(topic, "workers", (payload, meta) => {
        handler(payload, meta);
        seen.push({ payload, ...meta });
      });
      return seen.length > 0;
    };
    expect(await eventually(back, 10_000, 100)).toBe(true);
    expect(attempts).toEqual([1, 2]);
    expect(seen[0]).toMatchObject({ messageId, deliveryCount: 2 });
    expect(await drain(q, topic, "workers")).toEqual([]);
  });

  it("deduplicates sends with the same idempotencyKey, and points the duplicate at the original", async () => {
    const q = client();
    const topic = uniqueName("dedup");
    const a = await q.send(topic, { v: "original" }, { idempotencyKey: "payment-7" });
    const b = await q.send(topic, { v: "again" }, { idempotencyKey: "payment-7" });
    expect(b.messageId).not.toBe(a.messageId);
    expect((await drain(q, topic, "g")).map((s) => s.payload)).toEqual([{ v: "original" }]);
    // The client reports a duplicate's ID as not available (the 409 body names the original;
    // api.test.ts checks originalMessageId itself).
    const dup = await q.receive(topic, "g2", () => undefined, { messageId: b.messageId! });
    expect(dup).toEqual({ ok: false, reason: "not_available", messageId: b.messageId });
  });

  it("delays delivery with delaySeconds", async () => {
    const q = client();
    const topic = uniqueName("delayed");
    await q.send(topic, { later: true }, { delaySeconds: 1 });
    expect(await drain(q, topic, "g")).toEqual([]);
    let seen: Seen[] = [];
    await eventually(async () => (seen = await drain(q, topic, "g")).length > 0, 10_000, 100);
    expect(seen).toEqual([expect.objectContaining({ payload: { later: true }, deliveryCount: 1 })]);
  });

  it("keeps deployments apart: a pinned deployment sees only its own messages", async () => {
    const topic = uniqueName("pinned");
    const dep1 = client({ deploymentId: "dpl_one" });
    const dep2 = client({ deploymentId: "dpl_two" });
    await dep1.send(topic, { from: 1 });
    expect(await drain(dep2, topic, "g")).toEqual([]);
    expect(await drain(client(), topic, "g")).toEqual([]);
    expect((await drain(dep1, topic, "g")).map((s) => s.payload)).toEqual([{ from: 1 }]);
  });

  it("sends a batch with experimental_sendBatch", async () => {
    const q = client();
    const topic = uniqueName("batch");
    const results = await q.experimental_sendBatch(topic, [
      { payload: { n: 1 } },
      { payload: { n: 2 }, idempotencyKey: "b-2" },
      { payload: { n: 3 }, delaySeconds: 0 },
    ]);
    expect(results.map((r) => r.status)).toEqual(["sent", "sent", "sent"]);
    // Parts are stored concurrently (a keyed part takes more round trips), so not in order.
    const payloads = (await drain(q, topic, "g")).map((s) => s.payload as { n: number });
    expect(payloads.map((p) => p.n).sort()).toEqual([1, 2, 3]);
  });
});

// What the in-memory twins do as their injected clock moves, which the contracts (real time on
// JetStream) cannot wait for: a large body expires with its message's retention plus the margin
// (counted from the latest its message may be published), and a deferred message keeps its
// retention and delay counting while it waits in the neighbour.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryBodyStore } from "../../src/memory/memory-body-store.js";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import { MemoryDeferrer } from "../../src/memory/memory-deferrer.js";
import { BodyCorruptError } from "../../src/queue/bodies.js";
import type { NewMessage } from "../../src/queue/broker.js";
import { makeNamespace, type TopicAddress } from "../../src/queue/namespace.js";
import { deriveSecretKeys } from "../../src/queue/identity/secret-keys.js";
import { QueueService } from "../../src/queue/queue-service.js";
import { createQueueContext } from "../../src/queue/use-cases/queue-context.js";

const topic: TopicAddress = {
  namespace: makeNamespace("twin-team", "p", "production", null),
  topic: "orders",
};

describe("MemoryBodyStore on its clock", () => {
  it("keeps a body for its retention plus the margin past the latest its message may be published, then reads it as missing", async () => {
    let clock = 1_000_000;
    const store = new MemoryBodyStore({
      now: () => clock,
      chunkBytes: 16,
      ttlMarginSeconds: 300,
      uploadBoundSeconds: 100,
    });
    const body = randomBytes(40);
    const ref = await store.write(topic, [body], {
      retentionSeconds: 60,
      maxBytes: 100,
      declaredLength: 40,
    });
    await store.commit(topic, ref, 60);
    expect(store.isCommitted(topic, ref)).toBe(true);
    expect(store.storedChunks(topic)).toBe(3);
    expect(ref.publishByMs).toBe(clock + 100_000);
    clock += 459_999; // 100 s to publish by, then 60 s of retention and the 300 s margin
    const got: Uint8Array[] = [];
    for await (const piece of store.read(topic, ref)) got.push(piece);
    expect(Buffer.concat(got).equals(body)).toBe(true);
    clock += 1;
    expect(store.storedChunks(topic)).toBe(0);
    await expect(
      (async () => {
        for await (const piece of store.read(topic, ref)) got.push(piece);
      })(),
    ).rejects.toBeInstanceOf(BodyCorruptError);
  });
});

describe("a large publish on the twins", () => {
  it("is refused (408) and leaves no body when its message would come after the body's publish-by time", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const broker = new MemoryBroker({ now, defaultLeaseMs: 1000, dedupWindowMs: 120_000 });
    const bodies = new MemoryBodyStore({ now, chunkBytes: 16, uploadBoundSeconds: 100 });
    const keys = deriveSecretKeys("memory-twins-secret-memory-twins-secret", "iad1");
    const queue = new QueueService({
      context: createQueueContext({
        broker,
        records: broker.records,
        cuts: broker.cuts,
        flowSlots: broker.flowSlots,
        idLeaseMarkWaitMs: 0,
        bodies,
        keys,
        now,
      }),
    });
    const input = {
      contentType: null,
      retentionSeconds: 60,
      delaySeconds: 0,
      idempotencyKey: null,
      trace: null,
      headers: {},
    };
    // A batch part whose batch goes on being read: its message waits for the batch's decision.
    const later = (ms: number) =>
      new Promise<boolean>((resolve) => setTimeout(() => resolve(((clock += ms), true)), 10));
    const publish = (ms: number) =>
      queue.publishStreamed(topic, input, {
        source: [randomBytes(40)],
        declaredLength: null,
        maxBytes: 100,
        commit: later(ms),
      });
    await expect(publish(100_001)).rejects.toMatchObject({ code: "request_timeout", status: 408 });
    expect(bodies.storedChunks(topic)).toBe(0);
    // By the publish-by time it is stored, and its body outlives it: the one message there.
    expect(await publish(100_000)).toMatchObject({ deferred: false });
    expect(bodies.storedChunks(topic)).toBe(3);
    expect(await broker.pull({ ...topic, group: "g" }, 10)).toHaveLength(1);
  });
});

describe("MemoryDeferrer on its clock", () => {
  const message = (text: string, retentionSeconds: number, delaySeconds = 0): NewMessage => ({
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds,
    delaySeconds,
    idempotencyKey: null,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
    headers: {},
  });

  it("drops what expired while waiting and shortens a delay by the time waited", async () => {
    let clock = Date.parse("2026-01-05T10:00:00Z");
    const broker = new MemoryBroker({
      now: () => clock,
      defaultLeaseMs: 1000,
      dedupWindowMs: 120_000,
    });
    const deferrer = new MemoryDeferrer({ home: broker, now: () => clock });
    await deferrer.defer(topic, message("short", 10));
    await deferrer.defer(topic, message("delayed", 3600, 30));
    expect(deferrer.waiting()).toBe(2);
    clock += 20_000;
    await deferrer.relocate();
    expect(deferrer.waiting()).toBe(0);
    const g = { ...topic, group: "g" };
    // "short" expired in the neighbour; "delayed" has 10 s of its 30 left.
    expect(await broker.pull(g, 10)).toEqual([]);
    clock += 10_000;
    broker.pump();
    const got = (await broker.pull(g, 10))!;
    expect(got.map((d) => new TextDecoder().decode(d.message.payload))).toEqual(["delayed"]);
  });
});

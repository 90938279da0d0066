// What the in-memory twins do as their injected clock moves, which the contracts (real time on
// JetStream) cannot wait for: a large body expires with its message's retention plus the margin,
// and a deferred message keeps its retention and delay counting while it waits in the neighbour.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryBodyStore } from "../../src/memory/memory-body-store.js";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import { MemoryDeferrer } from "../../src/memory/memory-deferrer.js";
import { BodyCorruptError } from "../../src/queue/bodies.js";
import type { NewMessage } from "../../src/queue/broker.js";
import { makeNamespace, type TopicAddress } from "../../src/queue/namespace.js";

const topic: TopicAddress = {
  namespace: makeNamespace("twin-team", "p", "production", null),
  topic: "orders",
};

describe("MemoryBodyStore on its clock", () => {
  it("keeps a body for its retention plus the margin, then reads it as missing", async () => {
    let clock = 1_000_000;
    const store = new MemoryBodyStore({ now: () => clock, chunkBytes: 16, ttlMarginSeconds: 300 });
    const body = randomBytes(40);
    const ref = await store.write(topic, [body], {
      retentionSeconds: 60,
      maxBytes: 100,
      declaredLength: 40,
    });
    await store.commit(topic, ref, 60);
    expect(store.isCommitted(topic, ref)).toBe(true);
    expect(store.storedChunks(topic)).toBe(3);
    clock += 359_999;
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

describe("MemoryDeferrer on its clock", () => {
  const message = (text: string, retentionSeconds: number, delaySeconds = 0): NewMessage => ({
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds,
    delaySeconds,
    idempotencyKey: null,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
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

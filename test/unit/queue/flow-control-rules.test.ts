// Flow control's concurrency per key on the in-memory storage ports, the clock moved by the test:
// a key's messages beyond its limit wait (held on the gateway, no delivery counted, never a 429)
// while other keys' messages go; a slot frees at an acknowledgement, a release or the lease's
// end, through any gateway. On a real nats-server: test/integration/consumers/flow-control.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import { errorCode } from "../../helpers/memory-queue.js";
import { MemoryQueueAdmin } from "../../../src/memory/memory-queue-admin.js";
import { MAX_HELD_PER_GROUP, MAX_HOLD_MS } from "../../../src/queue/flow-control/flow-gate.js";
import {
  DEFAULT_SETTINGS,
  type ConsumerSettings,
} from "../../../src/queue/settings/consumer-settings.js";
import type { QueueService } from "../../../src/queue/queue-service.js";
import type { ReceivedMessage } from "../../../src/queue/delivery/received-message.js";
import { memoryQueue, rulesGroup, type MemoryQueue } from "../../helpers/memory-queue.js";

const group = rulesGroup("workers");

let settings: ConsumerSettings = DEFAULT_SETTINGS;
let memory: MemoryQueue;
beforeEach(() => {
  settings = limited(1);
  memory = memoryQueue({ settingsOf: () => settings });
});

function limited(concurrency: number, more: Partial<ConsumerSettings> = {}): ConsumerSettings {
  return {
    ...DEFAULT_SETTINGS,
    flowControl: { key: "tenant", concurrency, rate: null, ordered: false },
    ...more,
  };
}

/** Publishes `text` with the header `tenant: key` (null: without it). */
async function publish(text: string, key: string | null): Promise<void> {
  await memory.publishId(group, text, { headers: key === null ? {} : { tenant: key } });
}

const text = (m: ReceivedMessage) => new TextDecoder().decode(m.payload);
const texts = (ms: readonly ReceivedMessage[]) => ms.map(text);
const receive = (q: QueueService = memory.queue, maxMessages = 10) =>
  q.receive(group, { maxMessages, visibilityTimeoutSeconds: 30, maxConcurrency: null });

describe("flow control: concurrency per key", () => {
  it("hands out one message per key at a time, other keys' messages beside it", async () => {
    for (const [t, k] of [
      ["a1", "a"],
      ["a2", "a"],
      ["b1", "b"],
      ["a3", "a"],
      ["b2", "b"],
    ] as const) {
      await publish(t, k);
    }
    const first = await receive();
    expect(texts(first)).toEqual(["a1", "b1"]);
    expect(await receive()).toEqual([]); // a2 and b2 wait: their keys are at their limit
    expect(memory.context.flow.heldCount).toBe(3);
    await memory.queue.acknowledge(group, first[0]!.receiptHandle);
    const next = await receive();
    expect(texts(next)).toEqual(["a2"]);
    expect(next[0]!.deliveryCount).toBe(1);
    await memory.queue.acknowledge(group, first[1]!.receiptHandle);
    await memory.queue.acknowledge(group, next[0]!.receiptHandle);
    expect(texts(await receive())).toEqual(["a3", "b2"]);
  });

  it("allows `concurrency` messages of a key in flight, and never more", async () => {
    settings = limited(2);
    for (const t of ["a1", "a2", "a3", "a4"]) await publish(t, "a");
    expect(texts(await receive())).toEqual(["a1", "a2"]);
    expect(await receive()).toEqual([]);
  });

  it("does not limit messages without the key header", async () => {
    for (const t of ["n1", "n2", "n3"]) await publish(t, null);
    expect(texts(await receive())).toEqual(["n1", "n2", "n3"]);
  });

  it("frees a key's slot when its message is released, or when its lease ends", async () => {
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1);
    await memory.queue.changeVisibility(group, a1!.receiptHandle, 0);
    // a1 is back and the slot free: the oldest of the key, a1 (its 2nd delivery), goes again.
    const again = await receive(memory.queue, 1);
    expect(texts(again)).toEqual(["a1"]);
    expect(await receive()).toEqual([]);
    memory.advance(31_000); // a1's lease ends unacknowledged: its slot with it
    const after = await receive();
    expect(after).toHaveLength(1);
    expect(["a1", "a2"]).toContain(text(after[0]!));
  });

  it("lets a held message wait past maxDeliveries' worth of holds without counting a delivery", async () => {
    settings = limited(1, { deadLetter: { topic: "orders-dead", maxDeliveries: 2 } });
    await publish("a1", "a");
    await publish("a2", "a");
    const [a1] = await memory.queue.receive(group, {
      maxMessages: 1,
      visibilityTimeoutSeconds: 600, // in flight throughout
      maxConcurrency: null,
    });
    // a2 is held, given back after its hold (a holdback, no delivery) and held again, 5 times.
    for (let i = 0; i < 5; i++) {
      expect(await receive()).toEqual([]);
      memory.advance(MAX_HOLD_MS + 2000);
      await memory.context.flow.sweep();
      memory.advance(2000);
    }
    await memory.queue.acknowledge(group, a1!.receiptHandle);
    const a2 = await receive();
    expect(texts(a2)).toEqual(["a2"]);
    expect(a2[0]!.deliveryCount).toBe(1);
    expect(await memory.broker.countMessages({ ...group, topic: "orders-dead" })).toBeNull();
  });

  it("holds the limit across gateways, and frees it through any of them", async () => {
    // A second gateway: its own context (waitlist, remembered keys) over the same store.
    const other = memory.anotherGateway();
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1);
    expect(await receive(other)).toEqual([]); // a2 held on the other gateway
    await other.acknowledge(group, a1!.receiptHandle); // acknowledged there: it reads a1's key
    expect(texts(await receive(other))).toEqual(["a2"]);
  });

  it("takes and gives back a key's slot with one write each, no read, on the gateway that saw it last", async () => {
    const slots = memory.broker.flowSlots;
    const calls: string[] = [];
    const get = slots.getKeySlots.bind(slots);
    const put = slots.putKeySlots.bind(slots);
    slots.getKeySlots = (...a) => (calls.push("get"), get(...a));
    slots.putKeySlots = (...a) => (calls.push("put"), put(...a));
    const other = memory.anotherGateway();
    for (const t of ["a1", "a2", "a3"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1);
    await memory.queue.acknowledge(group, a1!.receiptHandle);
    expect(calls).toEqual(["put", "put"]); // created, then given back: by what this gateway wrote
    // The other gateway takes the key meanwhile: this one's memory of it is stale, its write
    // fails, and it reads before it decides (a2 is held by the other, so a3 waits).
    const [a2] = await receive(other, 1);
    expect(texts([a2!])).toEqual(["a2"]);
    calls.length = 0;
    expect(await receive(memory.queue, 1)).toEqual([]);
    expect(calls).toEqual(["put", "get"]);
    await other.acknowledge(group, a2!.receiptHandle);
    expect(texts([...(await receive()), ...(await receive(other))])).toEqual(["a3"]);
  });

  it("forgets a group's slots and held messages when it is sought", async () => {
    const admin = new MemoryQueueAdmin({ broker: memory.broker, now: memory.now });
    for (const t of ["a1", "a2"]) await publish(t, "a");
    expect(texts(await receive())).toEqual(["a1"]); // a2 held
    expect(await admin.seekGroup(group, "latest")).toBe(true);
    await publish("a3", "a");
    // The new cursor starts after a2: a3 goes, its key free (a1's old lease holds nothing now).
    expect(texts(await receive())).toEqual(["a3"]);
    expect(memory.context.flow.heldCount).toBe(0);
  });

  it("forgets the slots of a purged topic's leases", async () => {
    const admin = new MemoryQueueAdmin({ broker: memory.broker, now: memory.now });
    await publish("a1", "a");
    expect(texts(await receive())).toEqual(["a1"]);
    expect(await admin.purgeTopic(group)).toBe(1);
    await publish("a2", "a");
    expect(texts(await receive())).toEqual(["a2"]);
  });

  it("refuses to extend a lease whose slot ran out once another message of the key holds it", async () => {
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [a1] = await memory.queue.receive(group, {
      maxMessages: 1,
      visibilityTimeoutSeconds: 5,
      maxConcurrency: null,
    });
    expect(await receive()).toEqual([]); // a2 held
    memory.advance(6000); // a1's lease and its slot end; a1 is not redelivered yet
    const [a2] = await receive(memory.queue, 1);
    expect(text(a2!)).toBe("a2");
    expect(await errorCode(memory.queue.changeVisibility(group, a1!.receiptHandle, 60))).toBe(
      "receipt_handle_stale",
    );
    // a2's own extension keeps its slot: still nothing else of the key goes.
    await memory.queue.changeVisibility(group, a2!.receiptHandle, 120);
    memory.advance(60_000);
    expect(texts(await receive())).toEqual([]);
  });

  it("holds at most MAX_HELD_PER_GROUP of a group; more are given back, no delivery counted", async () => {
    const n = MAX_HELD_PER_GROUP + 10;
    for (let i = 0; i <= n; i++) await publish(`a${i}`, "a");
    expect(texts(await receive())).toEqual(["a0"]);
    for (let i = 0; i < 12; i++) expect(await receive()).toEqual([]);
    expect(memory.context.flow.heldCount).toBe(MAX_HELD_PER_GROUP);
    // The ones past the bound went back as holdbacks: their next delivery still counts 1.
    expect(await memory.context.pushLedger.holdbacks(group, n + 1)).toBe(1);
  });
});

describe("flow control with deduplication, delays and redrive", () => {
  const publishWith = (
    text: string,
    key: string,
    more: { idempotencyKey?: string; delaySeconds?: number },
  ) =>
    memory.queue.publish(group, {
      payload: new TextEncoder().encode(text),
      contentType: "text/plain",
      retentionSeconds: 3600,
      delaySeconds: more.delaySeconds ?? 0,
      idempotencyKey: more.idempotencyKey ?? null,
      trace: null,
      headers: { tenant: key },
    });

  it("counts a deduplicated publish once: the key's one message goes, and nothing waits", async () => {
    await publishWith("a1", "a", { idempotencyKey: "same" });
    await publishWith("a1 again", "a", { idempotencyKey: "same" });
    await publish("a2", "a");
    const [a1] = await receive();
    expect(texts([a1!])).toEqual(["a1"]);
    await memory.queue.acknowledge(group, a1!.receiptHandle);
    expect(texts(await receive())).toEqual(["a2"]);
    expect(await receive()).toEqual([]);
  });

  it("lets a delayed message take its key's slot only once it is due; the key's others go meanwhile", async () => {
    await publishWith("a-late", "a", { delaySeconds: 60 });
    await publish("a1", "a");
    const [a1] = await receive();
    expect(texts([a1!])).toEqual(["a1"]);
    expect(await receive()).toEqual([]);
    await memory.queue.acknowledge(group, a1!.receiptHandle);
    memory.advance(60_000);
    expect(texts(await receive())).toEqual(["a-late"]);
  });

  it("places a delayed message in its ordered key's order when it is due, as if published then", async () => {
    settings = {
      ...DEFAULT_SETTINGS,
      flowControl: { key: "tenant", concurrency: null, rate: null, ordered: true },
    };
    await publishWith("a-late", "a", { delaySeconds: 60 });
    await publish("a1", "a");
    const [a1] = await receive(); // not blocked by the one published before it, still delayed
    expect(texts([a1!])).toEqual(["a1"]);
    memory.advance(60_000);
    await memory.queue.acknowledge(group, a1!.receiptHandle);
    const [late] = [...(await receive()), ...(await receive())];
    expect(texts([late!])).toEqual(["a-late"]);
    await publish("a2", "a");
    expect([...(await receive()), ...(await receive())]).toEqual([]); // behind its head
    await memory.queue.acknowledge(group, late!.receiptHandle);
    expect(texts([...(await receive()), ...(await receive())])).toEqual(["a2"]);
  });

  it("limits a redriven dead letter by its key again, as a new message", async () => {
    settings = limited(1, { deadLetter: { topic: "orders-dead", maxDeliveries: 1 } });
    await publish("a1", "a");
    const [first] = await receive();
    await memory.queue.changeVisibility(group, first!.receiptHandle, 0);
    expect(await receive()).toEqual([]); // its second delivery is past maxDeliveries: dead-lettered
    await publish("a2", "a");
    const [a2] = await receive();
    expect(texts([a2!])).toEqual(["a2"]);
    const dead = { ...group, topic: "orders-dead" };
    expect(await memory.queue.redrive(dead, { target: null, limit: 10 })).toEqual({
      moved: 1,
      remaining: 0,
    });
    // Back with its key: it waits for a2, as any message of key a would.
    expect(await receive()).toEqual([]);
    await memory.queue.acknowledge(group, a2!.receiptHandle);
    const back = await receive();
    expect(back.map((m) => [text(m), m.deliveryCount])).toEqual([["a1", 1]]);
  });
});

// One contract for the management port (src/queue/management/queue-admin.ts), run against
// MemoryQueueAdmin (memory.test.ts, in the quick lane) and JetStreamAdmin on a real nats-server
// (jetstream.test.ts): what the management API's answers rest on (topics and groups with their
// figures, the position a peek starts from, purge, delete, seek), seen through the storage ports.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Broker, Delivery, NewMessage } from "../../src/queue/broker.js";
import type { QueueAdmin } from "../../src/queue/management/queue-admin.js";
import { makeNamespace, type GroupAddress, type TopicAddress } from "../../src/queue/namespace.js";

export interface AdminUnderTest {
  /** The storage ports over the same state as the admin. */
  readonly broker: () => Broker;
  readonly admin: () => QueueAdmin;
  /** The time the broker stamps messages with (ms). */
  readonly now: () => number;
  /** Lets `ms` of the broker's time pass. */
  advance(ms: number): Promise<void>;
  /** Writes what the broker keeps to write later (JetStream's push health), if anything. */
  settle?(): Promise<void>;
}

function message(text: string, delaySeconds = 0): NewMessage {
  return {
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds: 3600,
    delaySeconds,
    idempotencyKey: null,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
    headers: {},
  };
}

const text = (d: { message: { payload: Uint8Array } }) =>
  new TextDecoder().decode(d.message.payload);

export function queueAdminContract(name: string, under: AdminUnderTest): void {
  // A namespace of its own per test: the store is shared by the file's tests.
  const fresh = () => {
    const namespace = makeNamespace(
      "admin-team",
      randomBytes(4).toString("hex"),
      "production",
      null,
    );
    const topic = (t: string): TopicAddress => ({ namespace, topic: t });
    return { namespace, topic };
  };
  const group = (t: TopicAddress, g = "g"): GroupAddress => ({ ...t, group: g });

  /** Pulls until `want` deliveries came (or tries ran out), letting time pass between tries. */
  async function pullEventually(g: GroupAddress, want: number): Promise<Delivery[]> {
    const got: Delivery[] = [];
    for (let i = 0; i < 20 && got.length < want; i++) {
      got.push(...((await under.broker().pull(g, want - got.length)) ?? []));
      if (got.length < want) await under.advance(100);
    }
    return got;
  }

  async function publish(t: TopicAddress, ...texts: string[]): Promise<void> {
    for (const s of texts) await under.broker().publish(t, message(s));
  }

  describe(`queue admin contract: ${name}`, () => {
    it("lists a namespace's topics with their figures, and no one else's", async () => {
      const admin = under.admin();
      const { namespace, topic } = fresh();
      const [a, b] = [topic("alpha"), topic("beta")];
      const before = under.now();
      await publish(b, "one");
      await publish(a, "first", "second");
      await under.broker().publish(a, message("later", 60));
      expect(await admin.topicNames(namespace)).toEqual(["alpha", "beta"]);
      expect(await admin.topicNames(fresh().namespace)).toEqual([]);
      const figures = (await admin.topic(a))!;
      expect(figures).toMatchObject({ name: "alpha", messages: 2, delayed: 1, consumerGroups: 0 });
      expect(figures.bytes).toBeGreaterThan(0);
      const after = under.now();
      for (const at of [figures.oldestMessageAtMs!, figures.newestMessageAtMs!]) {
        expect(at).toBeGreaterThanOrEqual(before - 1000);
        expect(at).toBeLessThanOrEqual(after + 1000);
      }
      expect(figures.newestMessageAtMs!).toBeGreaterThanOrEqual(figures.oldestMessageAtMs!);
      const bytes = figures.bytes + (await admin.topic(b))!.bytes;
      expect(await admin.namespaceBytes(namespace)).toEqual({ bytes, largeBodyBytes: 0 });
      const listed = (await admin.namespaces()).find((n) => n.namespace.key === namespace.key);
      expect(listed).toMatchObject({ topics: 2, bytes });
      expect(await admin.topic(topic("missing"))).toBeNull();
      expect(await admin.groups(topic("missing"))).toBeNull();
      expect(await admin.groups(a)).toEqual([]);
    });

    it("counts a group's backlog, leases, redeliveries and acknowledgements", async () => {
      const admin = under.admin();
      const t = fresh().topic("orders");
      const g = group(t);
      const before = under.now();
      await publish(t, "a", "b", "c");
      const [first, second] = await pullEventually(g, 2);
      await under.broker().ack(g, first!);
      let [figures] = (await admin.groups(t))!;
      expect(figures).toMatchObject({
        name: "g",
        backlog: 1,
        inFlight: 1,
        deliveries: 2,
        redelivered: 0,
        acknowledgedThrough: first!.streamSeq,
        position: second!.streamSeq,
      });
      expect(figures!.oldestUnacknowledgedAtMs).toBeGreaterThanOrEqual(before - 1000);
      // Released, the second comes back as a redelivery.
      await under.broker().setLease(g, second!, 0);
      const again = await pullEventually(g, 1);
      expect(again.map(text)).toEqual(["b"]);
      [figures] = (await admin.groups(t))!;
      expect(figures).toMatchObject({ inFlight: 1, deliveries: 3, redelivered: 1, backlog: 1 });
      await pullEventually(group(t, "h"), 1);
      expect((await admin.groups(t))!.map((f) => f.name)).toEqual(["g", "h"]);
      // A page: the groups named after `after`, at most `max`.
      expect((await admin.groups(t, { after: null, max: 1 }))!.map((f) => f.name)).toEqual(["g"]);
      expect((await admin.groups(t, { after: "g", max: 5 }))!.map((f) => f.name)).toEqual(["h"]);
      expect(await admin.groups(t, { after: "h", max: 5 })).toEqual([]);
      expect((await admin.topic(t))!.consumerGroups).toBe(2);
      expect(await admin.deadLettered(g)).toBe(0);
      await under.broker().noteDeadLettered(g);
      expect(await admin.deadLettered(g)).toBe(1);
      expect(await admin.pushHealth(g)).toBeNull();
    });

    it("keeps a pushed group's health: the latest success, the latest failure and how", async () => {
      const admin = under.admin();
      const t = fresh().topic("pushed");
      const g = group(t);
      await publish(t, "a");
      await pullEventually(g, 1);
      const at = under.now();
      under.broker().notePushOutcome(g, "success", at - 3000);
      under.broker().notePushOutcome(g, "http_5xx", at - 2000);
      under.broker().notePushOutcome(g, "timeout", at - 1500);
      under.broker().notePushOutcome(g, "success", at - 1000);
      await under.settle?.();
      expect(await admin.pushHealth(g)).toEqual({
        lastSuccessAtMs: at - 1000,
        lastFailureAtMs: at - 1500,
        lastFailure: "timeout",
      });
      expect(await admin.pushHealth(group(t, "other"))).toBeNull();
    });

    it("purges every message, visible or delayed, and keeps the groups", async () => {
      const admin = under.admin();
      const { topic } = fresh();
      const t = topic("orders");
      const g = group(t);
      await publish(t, "a", "b");
      await under.broker().publish(t, message("later", 60));
      expect(await pullEventually(g, 1)).toHaveLength(1);
      const bytes = (await admin.topic(t))!.bytes;
      expect(await admin.purgeTopic(t)).toBe(3);
      const figures = (await admin.topic(t))!;
      expect(figures).toMatchObject({ messages: 0, delayed: 0, oldestMessageAtMs: null });
      expect(figures.bytes).toBeLessThan(bytes);
      expect(await under.broker().readTopic(t, 1, 10)).toEqual([]);
      expect((await admin.groups(t))!.map((f) => f.name)).toEqual(["g"]);
      expect(await admin.purgeTopic(topic("missing"))).toBeNull();
      // The group goes on with what is published next.
      await publish(t, "fresh");
      expect((await pullEventually(g, 1)).map(text)).toEqual(["fresh"]);
    });

    it("deletes a group and a topic, turning their handles stale", async () => {
      const admin = under.admin();
      const { namespace, topic } = fresh();
      const t = topic("orders");
      const g = group(t);
      await publish(t, "a");
      expect(await pullEventually(g, 1)).toHaveLength(1);
      await under.broker().noteDeadLettered(g);
      const epoch = under.broker().groupEpoch(g);
      expect(await admin.deleteGroup(g)).toBe(true);
      expect(await admin.deleteGroup(g)).toBe(false);
      expect(await admin.groups(t)).toEqual([]);
      expect(await admin.deadLettered(g)).toBe(0);
      await eventually(() => under.broker().groupEpoch(g) > epoch);
      expect(await admin.deleteTopic(t)).toBe(true);
      expect(await admin.topic(t)).toBeNull();
      expect(await admin.topicNames(namespace)).toEqual([]);
      expect(await admin.deleteTopic(t)).toBe(false);
    });

    it("finds where a time starts and seeks a group to the earliest, a time and the latest", async () => {
      const admin = under.admin();
      const t = fresh().topic("orders");
      const g = group(t);
      await publish(t, "a");
      await under.advance(300);
      const middle = under.now();
      await under.advance(50);
      await publish(t, "b", "c");
      const from = await admin.positionAt(t, middle);
      expect((await under.broker().readTopic(t, from, 10)).map(text)).toEqual(["b", "c"]);
      for (const d of await pullEventually(g, 3)) await under.broker().ack(g, d);
      expect(await admin.seekGroup(group(t, "none"), "earliest")).toBe(false);

      const epoch = under.broker().groupEpoch(g);
      expect(await admin.seekGroup(g, "earliest")).toBe(true);
      const all = await pullEventually(g, 3);
      expect(all.map(text)).toEqual(["a", "b", "c"]);
      expect(all.map((d) => d.deliveryCount)).toEqual([1, 1, 1]);
      await eventually(() => under.broker().groupEpoch(g) > epoch);
      for (const d of all) await under.broker().ack(g, d);

      expect(await admin.seekGroup(g, { timeMs: middle })).toBe(true);
      const later = await pullEventually(g, 2);
      expect(later.map(text)).toEqual(["b", "c"]);
      for (const d of later) await under.broker().ack(g, d);

      expect(await admin.seekGroup(g, "latest")).toBe(true);
      expect(await under.broker().pull(g, 1)).toEqual([]);
      await publish(t, "d");
      expect((await pullEventually(g, 1)).map(text)).toEqual(["d"]);
    });
  });

  async function eventually(check: () => boolean): Promise<void> {
    for (let i = 0; i < 20 && !check(); i++) {
      await under.advance(100);
    }
    expect(check()).toBe(true);
  }
}

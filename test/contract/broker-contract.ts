// One contract for the storage ports (src/queue/broker.ts), run against the in-memory
// implementation (memory.test.ts, in the quick lane) and the JetStream one on a real nats-server
// (jetstream.test.ts), so the in-memory one cannot drift from what the domain gets in production.
// Time is the suite's parameter: the memory side moves its clock, the JetStream side waits.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Broker, Delivery, NewMessage } from "../../src/queue/broker.js";
import { makeNamespace, type GroupAddress, type TopicAddress } from "../../src/queue/namespace.js";

export interface BrokerUnderTest {
  readonly broker: () => Broker;
  /** Lets `ms` of the broker's time pass. */
  advance(ms: number): Promise<void>;
  /** How often a JetStream-side wait is tried again before a check fails. */
  readonly patience: number;
}

const namespace = makeNamespace("contract-team", "contract-project", "production", null);

function topic(): TopicAddress {
  return { namespace, topic: `c_${randomBytes(5).toString("hex")}` };
}

function group(t: TopicAddress, name = "g"): GroupAddress {
  return { ...t, group: name };
}

function message(text: string, more: Partial<NewMessage> = {}): NewMessage {
  return {
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds: 3600,
    delaySeconds: 0,
    idempotencyKey: null,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
    headers: {},
    ...more,
  };
}

const text = (d: Delivery) => new TextDecoder().decode(d.message.payload);

export function brokerContract(name: string, under: BrokerUnderTest): void {
  /** Pulls until `want` deliveries came, letting time pass between tries. */
  async function pullEventually(g: GroupAddress, want: number, stepMs: number) {
    const got: Delivery[] = [];
    for (let i = 0; i < under.patience && got.length < want; i++) {
      await under.advance(stepMs);
      got.push(...((await under.broker().pull(g, want - got.length)) ?? []));
    }
    return got;
  }

  describe(`storage ports contract: ${name}`, () => {
    it("stores a message and finds it by the sequence of its ID", async () => {
      const b = under.broker();
      const t = topic();
      const stored = await b.publish(t, message("hello"));
      expect(stored.kind).toBe("stored");
      const seq = stored.kind === "stored" ? stored.seq : -1;
      const found = await b.lookup(t, seq);
      expect(found.kind).toBe("ready");
      if (found.kind !== "ready") return;
      expect(new TextDecoder().decode(found.message.payload)).toBe("hello");
      expect(found.message.contentType).toBe("text/plain");
      expect(found.message.idSeq).toBe(seq);
      expect(found.message.expiresAtMs - found.message.publishedAtMs).toBe(3_600_000);
      expect((await b.lookup(t, seq + 100)).kind).toBe("missing");
      expect((await b.lookup(topic(), 1)).kind).toBe("missing");
    });

    it("has no cursor, count or messages for a topic never published to", async () => {
      const b = under.broker();
      const t = topic();
      expect(await b.pull(group(t), 1)).toBeNull();
      expect(await b.countMessages(t)).toBeNull();
      expect(await b.readTopic(t, 1, 10)).toEqual([]);
    });

    it("hands a group each message once, in publish order, as its first delivery", async () => {
      const b = under.broker();
      const t = topic();
      for (const m of ["a", "b", "c"]) await b.publish(t, message(m));
      const g = group(t);
      const first = (await b.pull(g, 2))!;
      const second = (await b.pull(g, 5))!;
      expect([...first, ...second].map(text)).toEqual(["a", "b", "c"]);
      expect([...first, ...second].map((d) => d.deliveryCount)).toEqual([1, 1, 1]);
      expect(await b.pull(g, 5)).toEqual([]);
      const progress = (await b.progress(g))!;
      expect(progress.inFlight).toBe(3);
      expect(progress.deliveredSeq).toBe(second.at(-1)!.streamSeq);
      // Another group of the topic gets every message too.
      expect((await b.pull(group(t, "other"), 5))!.map(text)).toEqual(["a", "b", "c"]);
    });

    it("starts a group it makes at latest after the topic's last message, and never moves one", async () => {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("a"));
      await b.publish(t, message("b"));
      await b.publish(t, message("due later", { delaySeconds: 1 }));
      const existing = group(t, "existing");
      const [a] = (await b.pull(existing, 1))!;
      expect(text(a!)).toBe("a");
      await b.ack(existing, a!);
      const fresh = group(t, "fresh");
      expect(await b.pull(fresh, 5, "latest")).toEqual([]);
      await b.publish(t, message("c"));
      const [c] = (await b.pull(fresh, 5, "latest"))!;
      expect(text(c!)).toBe("c");
      await b.ack(fresh, c!);
      // A delayed message published before the group falls due after it started: it comes.
      expect((await pullEventually(fresh, 1, 500)).map(text)).toEqual(["due later"]);
      // An existing group is not moved, whatever a pull asks (a delayed message's place in the
      // log differs: JetStream stores it again when it falls due).
      const rest = (await b.pull(existing, 5, "latest"))!.map(text).sort();
      expect(rest).toEqual(["b", "c", "due later"]);
      // Earliest (the default) replays the topic; no topic: null, nothing made.
      const replay = (await b.pull(group(t, "replay"), 5, "earliest"))!.map(text).sort();
      expect(replay).toEqual(["a", "b", "c", "due later"]);
      expect(await b.pull(group(topic(), "none"), 1, "latest")).toBeNull();
    });

    /** A fresh topic with messages "a" and "b", both pulled by group "g". */
    async function twoPulled() {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("a"));
      await b.publish(t, message("b"));
      const g = group(t);
      const [a, bDelivery] = (await b.pull(g, 2))!;
      return { b, g, a: a!, bDelivery: bDelivery! };
    }

    it("takes an acknowledgement: the message leaves the group's view", async () => {
      const { b, g, a, bDelivery } = await twoPulled();
      await b.ack(g, a);
      await b.ack(g, a); // idempotent
      const progress = (await b.progress(g))!;
      expect(progress.inFlight).toBe(1);
      expect(progress.ackFloorSeq).toBe(a.streamSeq);
      await b.setLease(g, bDelivery, 0);
      const again = await pullEventually(g, 1, 50);
      expect(again.map(text)).toEqual(["b"]);
    });

    it("takes an acknowledgement sent without waiting for the store's answer", async () => {
      const { b, g, a, bDelivery } = await twoPulled();
      b.ackUnconfirmed(g, a);
      let progress = (await b.progress(g))!;
      for (let i = 0; i < under.patience && progress.ackFloorSeq !== a.streamSeq; i++) {
        await under.advance(50);
        progress = (await b.progress(g))!;
      }
      expect(progress.ackFloorSeq).toBe(a.streamSeq);
      expect(progress.inFlight).toBe(1);
      await b.setLease(g, bDelivery, 0);
      const again = await pullEventually(g, 1, 50);
      expect(again.map(text)).toEqual(["b"]);
    });

    it("redelivers a released message at once, one delivery later", async () => {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("a"));
      const g = group(t);
      const [first] = (await b.pull(g, 1))!;
      await b.setLease(g, first!, 0);
      const [second] = await pullEventually(g, 1, 50);
      expect(second!.streamSeq).toBe(first!.streamSeq);
      expect(second!.deliveryCount).toBe(2);
      expect(second!.deliverySeq).toBeGreaterThan(first!.deliverySeq);
    });

    it("holds a message whose lease was set until the lease ends, counting it in flight", async () => {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("a"));
      const g = group(t);
      const [first] = (await b.pull(g, 1))!;
      await b.setLease(g, first!, 800);
      expect(await b.pull(g, 1)).toEqual([]);
      expect((await b.progress(g))!.inFlight).toBe(1);
      await under.advance(1200);
      // Its lease over, it is still in flight until it is handed out again.
      expect((await b.progress(g))!.inFlight).toBe(1);
      const [second] = await pullEventually(g, 1, 400);
      expect(second!.deliveryCount).toBe(2);
    });

    it("redelivers a message whose default lease ran out", async () => {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("a"));
      const g = group(t);
      await b.pull(g, 1);
      const [again] = await pullEventually(g, 1, b.leaseMsOf(g) / 2);
      expect(again!.deliveryCount).toBe(2);
    });

    it("keeps a delayed message out of sight until it is due", async () => {
      const b = under.broker();
      const t = topic();
      const stored = await b.publish(t, message("later", { delaySeconds: 1 }));
      const seq = stored.kind === "stored" ? stored.seq : -1;
      expect((await b.lookup(t, seq)).kind).toBe("delayed");
      expect(await b.pull(group(t), 1)).toEqual([]);
      const [due] = await pullEventually(group(t), 1, 500);
      expect(text(due!)).toBe("later");
      expect(due!.message.idSeq).toBe(seq);
      expect((await b.lookup(t, seq)).kind).toBe("ready");
    });

    it("keeps a message's own headers with it: pulled, looked up, and after its delay", async () => {
      const b = under.broker();
      const t = topic();
      const headers = { "x-tenant": "acme", "x-quote": 'a "b" \\ c' };
      const now = await b.publish(t, message("now", { headers }));
      const later = await b.publish(t, message("later", { headers, delaySeconds: 1 }));
      await b.publish(t, message("plain"));
      const seqOf = (o: typeof now) => (o.kind === "stored" ? o.seq : -1);
      const found = await b.lookup(t, seqOf(now));
      expect(found.kind === "ready" && found.message.headers).toEqual(headers);
      const parked = await b.lookup(t, seqOf(later));
      expect(parked.kind === "delayed" && parked.message.headers).toEqual(headers);
      // The delayed one comes with the timer loop's next turn (seen over 10 s on 2.9.10).
      const got = await pullEventually(group(t), 3, 1500);
      const byText = Object.fromEntries(got.map((d) => [text(d), d.message.headers]));
      expect(byText).toEqual({ now: headers, later: headers, plain: {} });
    });

    it("answers a live idempotency key's message as the original", async () => {
      const b = under.broker();
      const t = topic();
      const first = await b.publish(t, message("a", { idempotencyKey: "k1" }));
      const second = await b.publish(t, message("b", { idempotencyKey: "k1" }));
      expect(first.kind).toBe("stored");
      expect(second).toEqual({
        kind: "duplicate",
        originalSeq: first.kind === "stored" ? first.seq : -1,
      });
      expect(await b.countMessages(t)).toBe(1);
    });

    it("keeps one copy of publishes with one dedup token", async () => {
      const b = under.broker();
      const t = topic();
      const first = await b.publish(t, message("a", { dedupToken: "tok" }));
      const second = await b.publish(t, message("a", { dedupToken: "tok" }));
      expect(second).toEqual(first);
      expect(await b.countMessages(t)).toBe(1);
    });

    it("reads, counts and removes the messages groups see", async () => {
      const b = under.broker();
      const t = topic();
      const seqs: number[] = [];
      for (const m of ["a", "b", "c"]) {
        const r = await b.publish(t, message(m));
        seqs.push(r.kind === "stored" ? r.seq : -1);
      }
      await b.publish(t, message("delayed", { delaySeconds: 600 }));
      expect(await b.countMessages(t)).toBe(3);
      await b.removeMessage(t, seqs[1]!);
      const read = await b.readTopic(t, 1, 10);
      expect(read.map((r) => new TextDecoder().decode(r.message.payload))).toEqual(["a", "c"]);
      expect(read.map((r) => r.streamSeq)).toEqual([seqs[0], seqs[2]]);
      expect((await b.readTopic(t, seqs[2]!, 10)).length).toBe(1);
      expect(await b.countMessages(t)).toBe(2);
      expect((await b.lookup(t, seqs[1]!)).kind).toBe("missing");
    });

    it("starts a group at epoch 0", () => {
      expect(under.broker().groupEpoch(group(topic()))).toBe(0);
    });

    it("feeds a waiting taker what is published", async () => {
      const b = under.broker();
      const t = topic();
      await b.publish(t, message("first"));
      const taken: Delivery[] = [];
      const feed = await b.openFeed(group(t), {
        demand: () => 2 - taken.length,
        take: (d) => void taken.push(d),
        gone: () => undefined,
      });
      expect(feed).not.toBeNull();
      await b.publish(t, message("second"));
      feed!.wake();
      for (let i = 0; i < under.patience && taken.length < 2; i++) await under.advance(50);
      feed!.close();
      expect(taken.map(text)).toEqual(["first", "second"]);
    });
  });
}

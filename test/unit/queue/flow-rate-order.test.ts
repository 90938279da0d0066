// Flow control's `rate` (GCRA per key) and `ordered` (one in flight per key, in publish order) on
// the in-memory storage ports, the clock moved by the test: a message without rate room, or not
// its key's head, waits held on the gateway (no delivery counted, never a 429) while other keys'
// messages go; an ordered key's head goes first after a failed or ended lease, and blocks its
// key until acknowledged, dead-lettered or expired. Real nats-server:
// test/integration/consumers/flow-control.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import { HEAD_CHECK_MS, MAX_HOLD_MS } from "../../../src/queue/flow-control/flow-gate.js";
import { gcraTake } from "../../../src/queue/flow-control/gcra.js";
import type { ReceivedMessage } from "../../../src/queue/delivery/received-message.js";
import { QueueService } from "../../../src/queue/queue-service.js";
import {
  DEFAULT_SETTINGS,
  type ConsumerSettings,
  type FlowControlSettings,
} from "../../../src/queue/settings/consumer-settings.js";
import { memoryQueue, rulesGroup, type MemoryQueue } from "../../helpers/memory-queue.js";

const group = rulesGroup("workers");
const dead = { ...group, topic: "orders-dead" };

let settings: ConsumerSettings = DEFAULT_SETTINGS;
let memory: MemoryQueue;
beforeEach(() => {
  memory = memoryQueue({ settingsOf: () => settings });
});

function flow(f: Partial<FlowControlSettings>, more: Partial<ConsumerSettings> = {}) {
  settings = {
    ...DEFAULT_SETTINGS,
    flowControl: { key: "tenant", concurrency: null, rate: null, ordered: false, ...f },
    ...more,
  };
}

async function publish(text: string, key: string | null, retentionSeconds = 3600): Promise<void> {
  await memory.publishId(group, text, {
    retentionSeconds,
    headers: key === null ? {} : { tenant: key },
  });
}

const text = (m: ReceivedMessage) => new TextDecoder().decode(m.payload);
const texts = (ms: readonly ReceivedMessage[]) => ms.map(text);
const receive = (q: QueueService = memory.queue, maxMessages = 10, leaseSeconds = 30) =>
  q.receive(group, { maxMessages, visibilityTimeoutSeconds: leaseSeconds, maxConcurrency: null });
const ackAll = (ms: readonly ReceivedMessage[], q: QueueService = memory.queue) =>
  Promise.all(ms.map((m) => q.acknowledge(group, m.receiptHandle)));

const otherGateway = () => memory.anotherGateway();
const otherContext = () => memory.anotherContext();

describe("GCRA", () => {
  it("lets `burst` go at once, then one per interval, exactly", () => {
    const rule = { intervalMs: 100, burst: 3 };
    let tat: number | null = null;
    const at = (now: number) => {
      const r = gcraTake(tat, now, rule);
      if (r.ok) tat = r.tatMs;
      return r;
    };
    expect([at(0).ok, at(0).ok, at(0).ok, at(0).ok]).toEqual([true, true, true, false]);
    expect(at(0)).toEqual({ ok: false, atMs: 100 });
    expect(at(99).ok).toBe(false);
    expect(at(100).ok).toBe(true);
    expect(at(150).ok).toBe(false);
    // A quiet key builds its burst back, never more.
    expect([at(10_000).ok, at(10_000).ok, at(10_000).ok, at(10_000).ok]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  it("keeps an interval that is not a whole number of ms exact over many hand-outs", () => {
    const rule = { intervalMs: 1000 / 3, burst: 1 };
    let tat: number | null = null;
    let n = 0;
    for (let now = 0; now < 60_000; now++) {
      const r = gcraTake(tat, now, rule);
      if (r.ok) [tat, n] = [r.tatMs, n + 1];
    }
    expect(n).toBe(180);
  });
});

describe("flow control: rate per key", () => {
  it("hands a key out at its rate over simulated minutes, other keys at once, no delivery counted", async () => {
    flow(
      { rate: { limit: 10, periodSeconds: 1, burst: 10 } },
      { deadLetter: { topic: "orders-dead", maxDeliveries: 1 } },
    );
    for (let i = 0; i < 700; i++) await publish(`a${i}`, "a");
    const perSecond = new Array<number>(60).fill(0);
    const start = memory.now();
    const seen: string[] = [];
    for (let t = 0; t < 60_000; t += 50) {
      if (t % 5000 === 0) await publish(`b${t}`, "b");
      const got = await receive(memory.queue, 10);
      for (const m of got) {
        expect(m.deliveryCount).toBe(1); // held and given back (holdbacks): never a delivery
        if (text(m).startsWith("a")) perSecond[Math.floor((memory.now() - start) / 1000)]!++;
        seen.push(text(m));
      }
      await ackAll(got);
      memory.advance(50);
      await memory.context.flow.sweep();
    }
    // The burst at once, then 10 each second.
    expect(perSecond[0]).toBe(10 + 9);
    for (const n of perSecond.slice(1)) expect(n).toBe(10);
    // Key b never waited behind key a's rate.
    expect(seen.filter((s) => s.startsWith("b"))).toHaveLength(12);
    // Nothing walked to maxDeliveries (1): no dead letter.
    expect(await memory.broker.countMessages(dead)).toBeNull();
  });

  it("counts every hand-out, a redelivery too; a release does not give the room back", async () => {
    flow({ rate: { limit: 1, periodSeconds: 10, burst: 1 } });
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1);
    expect(text(a1!)).toBe("a1");
    await memory.queue.changeVisibility(group, a1!.receiptHandle, 0);
    expect(await receive()).toEqual([]); // a1 is back, the key's next hand-out is due in 10 s
    memory.advance(9_999);
    expect(await receive()).toEqual([]);
    memory.advance(1);
    const again = await receive();
    expect(texts(again)).toEqual(["a1"]);
    expect(again[0]!.deliveryCount).toBe(2);
  });

  it("holds one key's rate across gateways", async () => {
    flow({ rate: { limit: 2, periodSeconds: 1, burst: 1 } });
    for (let i = 0; i < 40; i++) await publish(`a${i}`, "a");
    const other = otherGateway();
    let n = 0;
    for (let t = 0; t < 10_000; t += 100) {
      for (const q of [memory.queue, other]) {
        const got = await receive(q, 5);
        n += got.length;
        await ackAll(got, q);
      }
      memory.advance(100);
    }
    expect(n).toBe(20); // 2 per second for 10 s, through both gateways
  });

  it("combines with concurrency: both must have room", async () => {
    flow({ concurrency: 1, rate: { limit: 100, periodSeconds: 1, burst: 100 } });
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const first = await receive();
    expect(texts(first)).toEqual(["a1"]); // rate room for 100, one slot
    expect(await receive()).toEqual([]);
    await ackAll(first);
    expect(texts(await receive())).toEqual(["a2"]);
  });
});

describe("flow control: ordered keys", () => {
  beforeEach(() => flow({ ordered: true }));

  it("hands one message of a key out at a time, in publish order, other keys beside", async () => {
    for (const [t, k] of [
      ["a1", "a"],
      ["b1", "b"],
      ["a2", "a"],
      ["a3", "a"],
      ["b2", "b"],
      ["n1", null],
    ] as const) {
      await publish(t, k);
    }
    const first = await receive();
    expect(texts(first)).toEqual(["a1", "b1", "n1"]);
    expect(await receive()).toEqual([]);
    const order: string[] = [];
    let got = first;
    while (got.length > 0) {
      order.push(...texts(got));
      await ackAll(got);
      got = await receive();
    }
    expect(order).toEqual(["a1", "b1", "n1", "a2", "b2", "a3"]);
  });

  it("redelivers the head first after a release, and after its lease ends with a later one held", async () => {
    for (const t of ["a1", "a2", "a3"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1);
    await memory.queue.changeVisibility(group, a1!.receiptHandle, 0); // failed: released
    const again = await receive();
    expect(texts(again)).toEqual(["a1"]);
    expect(again[0]!.deliveryCount).toBe(2);
    // a2 and a3, pulled with it, wait here; given back after their hold, the other gateway
    // pulls them while a1 is still leased, and holds them.
    const otherCtx = otherContext();
    const other = new QueueService({ context: otherCtx });
    expect(memory.context.flow.heldCount).toBe(2);
    memory.advance(MAX_HOLD_MS + 100);
    await memory.context.flow.sweep();
    memory.advance(1500);
    expect(await receive(other)).toEqual([]);
    expect(otherCtx.flow.heldCount).toBe(2);
    // a1's lease ends unacknowledged: the other gateway holds later messages of the key and must
    // not hand them out first; a1 comes back to it, then a2.
    memory.advance(30_000 - MAX_HOLD_MS - 1600 + 1000);
    const next = await receive(other);
    expect(texts(next)).toEqual(["a1"]);
    expect(next[0]!.deliveryCount).toBe(3);
    await ackAll(next, other);
    const rest: string[] = [];
    for (let i = 0; i < 10 && rest.length < 2; i++) {
      const got = [...(await receive(memory.queue)), ...(await receive(other))];
      rest.push(...texts(got));
      for (const m of got) {
        await memory.queue.acknowledge(group, m.receiptHandle).catch(() => undefined);
      }
      memory.advance(2000);
      await memory.context.flow.sweep();
    }
    expect(rest).toEqual(["a2", "a3"]);
  });

  it("lets the next message go once the head is dead-lettered after maxDeliveries", async () => {
    flow({ ordered: true }, { deadLetter: { topic: "orders-dead", maxDeliveries: 2 } });
    for (const t of ["a1", "a2"]) await publish(t, "a");
    for (let i = 1; i <= 2; i++) {
      const [a1] = await receive();
      expect([text(a1!), a1!.deliveryCount]).toEqual(["a1", i]);
      await memory.queue.changeVisibility(group, a1!.receiptHandle, 0);
    }
    // a1's third delivery is past maxDeliveries: dead-lettered, and a2 is the key's head (held
    // here, it goes at the next receive: this one looked at the held before its pull).
    const next = [...(await receive()), ...(await receive())];
    expect(texts(next)).toEqual(["a2"]);
    expect(next[0]!.deliveryCount).toBe(1);
    expect(await memory.broker.countMessages(dead)).toBe(1);
  });

  it("lets the next message go once the head expires", async () => {
    await publish("a1", "a", 60);
    await publish("a2", "a");
    expect(texts(await receive())).toEqual(["a1"]); // never acknowledged
    memory.advance(61_000);
    expect(texts([...(await receive()), ...(await receive())])).toEqual(["a2"]);
  });

  it("finds a head removed from the log gone, within HEAD_CHECK_MS", async () => {
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [a1] = await receive(memory.queue, 1, 5);
    expect(text(a1!)).toBe("a1");
    expect(await receive()).toEqual([]); // a2 waits
    await memory.broker.removeMessage(group, 1); // a1 is gone, its lease with it
    memory.advance(HEAD_CHECK_MS + 6000);
    await memory.context.flow.sweep();
    let got: ReceivedMessage[] = [];
    for (let i = 0; i < 5 && got.length === 0; i++) {
      got = await receive();
      memory.advance(MAX_HOLD_MS);
      await memory.context.flow.sweep();
    }
    expect(texts(got)).toEqual(["a2"]);
  });

  it("keeps a message received by ID as its key's head, and settles it at its acknowledgement", async () => {
    const id = await memory.publishId(group, "a1", { headers: { tenant: "a" } });
    await publish("a2", "a");
    const byId = await memory.queue.receiveById(group, id, {
      visibilityTimeoutSeconds: 30,
      maxConcurrency: null,
    });
    // a1 is leased by ID (it bypasses the key's limits), a2 is pulled: a1, found before it in
    // the log and not acknowledged, is its key's head, so a2 waits.
    expect(await receive()).toEqual([]);
    await memory.queue.acknowledge(group, byId.receiptHandle);
    expect(texts(await receive())).toEqual(["a2"]);
  });

  it("answers a stale handle whose acknowledgement landed after a redelivery 409, the key kept to that delivery", async () => {
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const [first] = await receive(memory.queue, 1);
    const other = new QueueService({ context: otherContext() });
    // This gateway checks the handle (current: within its lease), then pauses past the lease
    // before its ack reaches the store; meanwhile the other gateway hands a1 out again.
    const ack = memory.broker.ack.bind(memory.broker);
    let again: ReceivedMessage[] = [];
    memory.broker.ack = async (g, lease) => {
      memory.broker.ack = ack;
      memory.advance(31_000);
      again = await receive(other, 1);
      return ack(g, lease);
    };
    await expect(memory.queue.acknowledge(group, first!.receiptHandle)).rejects.toMatchObject({
      code: "receipt_handle_stale",
    });
    expect(again.map((m) => [text(m), m.deliveryCount])).toEqual([["a1", 2]]);
    // Delivery 2 still runs: a2 waits on both gateways, whatever delivery 1's ack did.
    expect([...(await receive()), ...(await receive(other))]).toEqual([]);
    await ackAll(again, other);
    expect(texts([...(await receive()), ...(await receive(other))])).toEqual(["a2"]);
  });

  it("keeps publish order when a later message reaches another gateway's gate first", async () => {
    for (const t of ["a1", "a2"]) await publish(t, "a");
    const other = otherContext();
    // This gateway pulls a1 and a2 is pulled for the other before a1 is written in the order.
    const [d1] = (await memory.broker.pull(group, 1))!;
    const [d2] = (await memory.broker.pull(group, 1))!;
    const deadline = memory.now() + 30_000;
    const there = await other.flow.admit(group, [d2!], deadline);
    expect(there.pass).toEqual([]); // a1 was found in the log before it: a2 waits
    const here = await memory.context.flow.admit(group, [d1!], deadline);
    expect(here.pass.map((d) => d.streamSeq)).toEqual([d1!.streamSeq]);
  });
});

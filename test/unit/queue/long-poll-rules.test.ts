// Long polling (ReceiveOptions.waitSeconds) on the in-memory storage ports, with fake timers: a
// receive with nothing to hand out waits for a message and answers as soon as one is there (a
// publish, a delayed message coming due, the first message of a topic created meanwhile), and
// with nothing when the wait is over, the client hangs up or the gateway stops waiting; it holds
// nothing while it waits, and the waiters of a group share one feed. The waits run on the timers
// (LongPolls' setTimeout and Date.now, faked here) and the messages on the twin's clock
// (`memory.advance`, then `pump()` hands what became due to open feeds). End to end through
// JetStream, across gateways, with a thousand waiters: test/integration/consumers/long-polling.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { isAppError } from "../../../src/errors.js";
import { makeNamespace, type GroupAddress } from "../../../src/queue/namespace.js";
import type { ReceivedMessage } from "../../../src/queue/delivery/received-message.js";
import type { ReceiveOptions } from "../../../src/queue/use-cases/receive.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";

const namespace = makeNamespace("team", "project", "production", null);
const workers: GroupAddress = { namespace, topic: "orders", group: "workers" };

let memory: MemoryQueue;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  memory = memoryQueue();
});
afterEach(() => {
  memory.queue.stopWaiting();
  vi.useRealTimers();
});

const options = (more: Partial<ReceiveOptions> = {}): ReceiveOptions => ({
  maxMessages: 1,
  visibilityTimeoutSeconds: 30,
  maxConcurrency: null,
  ...more,
});

const text = (m: ReceivedMessage) => new TextDecoder().decode(m.payload);

/** A waiting receive, and whether it has answered yet. */
function waiting(group: GroupAddress, seconds: number, more: Partial<ReceiveOptions> = {}) {
  const state: { answer: ReceivedMessage[] | null; error: unknown } = { answer: null, error: null };
  const done = memory.queue.receive(group, options({ waitSeconds: seconds, ...more })).then(
    (got) => {
      state.answer = got;
      return got;
    },
    (err: unknown) => {
      state.error = err;
      return [] as ReceivedMessage[];
    },
  );
  return { state, done };
}

/** Lets every promise settle without moving the timers. */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await vi.advanceTimersByTimeAsync(0);
}

/** Groups whose topic exists, and which have handed out everything (one topic). */
async function emptied(...groups: GroupAddress[]): Promise<void> {
  await memory.publish(groups[0]!, "warm-up");
  for (const group of groups) {
    const [m] = await memory.queue.receive(group, options());
    await memory.queue.acknowledge(group, m!.receiptHandle);
  }
}

describe("long polling", () => {
  it("answers as soon as a message is published", async () => {
    await emptied(workers);
    const w = waiting(workers, 10);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(w.state.answer).toBeNull();
    await memory.publish(workers, "hello");
    const got = await w.done;
    expect(got.map(text)).toEqual(["hello"]);
    expect(got[0]!.deliveryCount).toBe(1);
  });

  it("answers with nothing when the wait is over, not before", async () => {
    await emptied(workers);
    const w = waiting(workers, 1);
    await vi.advanceTimersByTimeAsync(999);
    expect(w.state.answer).toBeNull();
    await vi.advanceTimersByTimeAsync(1);
    expect(await w.done).toEqual([]);
  });

  it("wakes for a delayed message when it comes due", async () => {
    const published = await memory.queue.publish(workers, {
      payload: new TextEncoder().encode("later"),
      contentType: "text/plain",
      retentionSeconds: 3600,
      delaySeconds: 2,
      idempotencyKey: null,
      trace: null,
      headers: {},
    });
    const w = waiting(workers, 10);
    await settle();
    memory.advance(1_900);
    memory.broker.pump();
    await settle();
    expect(w.state.answer).toBeNull();
    memory.advance(100);
    memory.broker.pump();
    const got = await w.done;
    expect(got.map((m) => [text(m), m.deliveryCount])).toEqual([["later", 1]]);
    expect(published.deferred || got[0]!.messageId === published.messageId).toBe(true);
  });

  it("wakes at once for a topic a publish through the same gateway creates", async () => {
    // Waiters that find no topic look again every second; a publish through their gateway wakes
    // them at once, without that second.
    const fresh: GroupAddress = { namespace, topic: "made", group: "workers" };
    const w = waiting(fresh, 10);
    await settle();
    expect(w.state.answer).toBeNull();
    await memory.publish(fresh, "made");
    await settle();
    expect(w.state.answer?.map(text)).toEqual(["made"]);
  });

  it("finds a topic created elsewhere at its next look, a second later", async () => {
    const fresh: GroupAddress = { namespace, topic: "elsewhere", group: "workers" };
    const w = waiting(fresh, 10);
    await settle();
    // Stored without this gateway's QueueService (as another gateway's publish is).
    await memory.broker.publish(fresh, {
      nonce: "n1",
      payload: new TextEncoder().encode("first ever"),
      contentType: "text/plain",
      retentionSeconds: 3600,
      delaySeconds: 0,
      idempotencyKey: null,
      trace: null,
      headers: {},
    });
    await settle();
    expect(w.state.answer).toBeNull();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(w.state.answer?.map(text)).toEqual(["first ever"]);
  });

  it("leaves nothing leased when the client hangs up while waiting", async () => {
    await emptied(workers);
    const abort = new AbortController();
    const w = waiting(workers, 10, { signal: abort.signal });
    await vi.advanceTimersByTimeAsync(300);
    abort.abort();
    expect(await w.done).toEqual([]);
    await memory.publish(workers, "for whoever comes next");
    await vi.advanceTimersByTimeAsync(1_000); // past the time a spare delivery is kept
    const [m] = await memory.queue.receive(workers, options());
    expect([text(m!), m!.deliveryCount]).toEqual(["for whoever comes next", 1]);
    expect((await memory.broker.progress(workers))!.inFlight).toBe(1);
  });

  it("takes the concurrency limit into account only for what it hands out", async () => {
    const limit = { maxConcurrency: 2 };
    for (const m of ["a", "b"]) await memory.publish(workers, m);
    expect(await memory.queue.receive(workers, options(limit))).toHaveLength(1);
    expect(await memory.queue.receive(workers, options(limit))).toHaveLength(1);
    // At the limit: refused at once, waiting or not.
    const refused = waiting(workers, 5, limit);
    await settle();
    expect(isAppError(refused.state.error) && refused.state.error.code).toBe(
      "concurrency_limit_exceeded",
    );
    // Below it, a waiting receive holds nothing while it waits.
    const other: GroupAddress = { namespace, topic: "other", group: "workers" };
    await memory.publish(other, "x");
    expect(await memory.queue.receive(other, options())).toHaveLength(1);
    const w = waiting(other, 10, limit);
    await vi.advanceTimersByTimeAsync(300);
    expect((await memory.broker.progress(other))!.inFlight).toBe(1);
    await memory.publish(other, "y");
    expect((await w.done).map(text)).toEqual(["y"]);
  });

  it("answers every waiter at once with nothing when the gateway stops waiting", async () => {
    await emptied(workers);
    const waits = Array.from({ length: 20 }, () => waiting(workers, 20));
    await settle();
    expect(memory.queue.waitingReceives).toBe(20);
    memory.queue.stopWaiting();
    await settle();
    expect(waits.map((w) => w.state.answer)).toEqual(waits.map(() => []));
  });

  it("holds many waiters of a group on one feed, and hands each a message once", async () => {
    const groups = Array.from({ length: 10 }, (_, i) => ({ ...workers, group: `g${i}` }));
    await emptied(...groups);
    const feeds = vi.spyOn(memory.broker, "openFeed");
    const waits = groups.map((g) => Array.from({ length: 100 }, () => waiting(g, 20)));
    await settle();
    expect(memory.queue.waitingReceives).toBe(1000);
    expect(feeds).toHaveBeenCalledTimes(groups.length);
    for (let i = 0; i < 100; i++) await memory.publish(workers, `m${i}`);
    await settle();
    for (const perGroup of waits) {
      const bodies = perGroup.flatMap((w) => (w.state.answer ?? []).map(text)).sort();
      expect(bodies).toEqual(Array.from({ length: 100 }, (_, i) => `m${i}`).sort());
    }
  });

  it("lets receives that come back to a followed group join its feed without a pull each", async () => {
    await emptied(workers);
    const first = waiting(workers, 10);
    await settle();
    const pulls = vi.spyOn(memory.broker, "pull");
    const feeds = vi.spyOn(memory.broker, "openFeed");
    const rest = Array.from({ length: 200 }, () => waiting(workers, 10));
    await settle();
    expect(memory.queue.waitingReceives).toBe(201);
    expect(pulls).not.toHaveBeenCalled();
    expect(feeds).not.toHaveBeenCalled();
    // What is published is handed out as before: each message once, to the longest waiters.
    for (let i = 0; i < 201; i++) await memory.publish(workers, `m${i}`);
    await settle();
    expect(first.state.answer?.map(text)).toEqual(["m0"]);
    const bodies = [first, ...rest].flatMap((w) => (w.state.answer ?? []).map(text)).sort();
    expect(bodies).toEqual(Array.from({ length: 201 }, (_, i) => `m${i}`).sort());
  });
});

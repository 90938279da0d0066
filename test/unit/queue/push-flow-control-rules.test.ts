// Flow control's concurrency, rate and order per key on PUSHED groups, on the in-memory twins: the gateway's
// PushScheduler fed by MemoryPushFeeds, pushes the test ends itself (or the real Pusher and a real
// endpoint). A pulled message whose key has no free slot is held unpushed and uncounted, other
// keys go beside it, the key's next goes when a slot frees (here, through another gateway, or at
// a lease's end), and what is held is bounded and given back as holdbacks. On a real nats-server
// with two gateways: test/integration/consumers/push-flow-control.test.ts.
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { MemorySettingsStore } from "../../../src/memory/memory-settings-store.js";
import type { StoredMessage } from "../../../src/queue/broker.js";
import { MAX_HELD_PER_GROUP, MAX_HOLD_MS } from "../../../src/queue/flow-control/flow-gate.js";
import { flowKeyHash } from "../../../src/queue/flow-control/flow-keys.js";
import { KeySlots } from "../../../src/queue/flow-control/key-slots.js";
import { makeNamespace, type GroupAddress } from "../../../src/queue/namespace.js";
import { FULL_KEY_RETRY_MS } from "../../../src/queue/push-delivery/group-pushes.js";
import type { ConsumerSettings } from "../../../src/queue/settings/consumer-settings.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";
import {
  memoryPusher,
  scheduledPushes,
  settle,
  usePushEndpoint,
  type OpenPush,
  type ScheduledPushes,
} from "../../helpers/memory-pusher.js";

const SECRET = "push-flow-control-secret-push-flow!!";
const NS = makeNamespace("team", "prj_flow", "production", null);
const group: GroupAddress = { namespace: NS, topic: "orders", group: "g" };

const endpoint = usePushEndpoint();

function keyed(url: string, concurrency: number, maxConcurrency = 10): ConsumerSettings {
  return {
    push: { url, maxConcurrency, timeoutSeconds: 30, autoAck: true },
    retry: { afterSeconds: 5, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
    deadLetter: null,
    flowControl: { key: "tenant", concurrency, rate: null, ordered: false },
  };
}

interface World {
  readonly memory: MemoryQueue;
  readonly settings: MemorySettingsStore;
  readonly pushes: ScheduledPushes;
}

/** The twins without a namespace cap; the real Pusher when `real`. */
async function world(real = false): Promise<World> {
  const settings = new MemorySettingsStore(() => memory.now());
  const memory = memoryQueue({
    secret: SECRET,
    settingsOf: (g) => settings.effective(g.namespace, g.topic, g.group),
  });
  const push = real ? memoryPusher(memory, endpoint.client, SECRET) : undefined;
  const pushes = await scheduledPushes(memory, settings, {
    cap: 0,
    ...(push ? { push, passes: () => true } : {}),
  });
  onTestFinished(async () => {
    const stopped = pushes.feeds.stop();
    await settle(() => {
      for (const p of [...pushes.open]) p.end();
      return pushes.open.length === 0;
    });
    await stopped;
  });
  return { memory, settings, pushes };
}

/** Publishes each [text, key] (key null: no key header), the clock a millisecond apart. */
async function publish(w: World, ...messages: [string, string | null][]): Promise<void> {
  for (const [text, key] of messages) {
    await w.memory.publishId(group, text, { headers: key === null ? {} : { tenant: key } });
    w.memory.advance(1);
  }
}

async function pushWith(w: World, settings: ConsumerSettings): Promise<void> {
  await w.settings.put(NS, group.topic, group.group, settings);
  await w.pushes.feeds.resync();
}

/** The push's message acknowledged through the API (its key's slot given back), then answered. */
async function ack(w: World, p: OpenPush): Promise<void> {
  await w.memory.broker.ack(group, p.delivery);
  await w.memory.context.flow.leaseMoved(group, p.delivery.streamSeq, 0);
  p.end();
}

/** A group pushed with a rate per key (no concurrency limit): `limit` per `periodSeconds`. */
function rated(url: string, limit: number, periodSeconds: number, burst = 1): ConsumerSettings {
  const s = keyed(url, 1);
  return {
    ...s,
    flowControl: {
      key: "tenant",
      concurrency: null,
      rate: { limit, periodSeconds, burst },
      ordered: false,
    },
  };
}

/** A group pushed in order per key. */
function ordered(url: string): ConsumerSettings {
  const s = keyed(url, 1);
  return { ...s, flowControl: { key: "tenant", concurrency: null, rate: null, ordered: true } };
}

/** As `ack`, through the API's path: settled, so it leaves its ordered key's order. */
async function ackSettled(w: World, p: OpenPush): Promise<void> {
  await w.memory.broker.ack(group, p.delivery);
  await w.memory.context.flow.settled(group, p.delivery.streamSeq);
  p.end();
}

/** The bodies the endpoint's route `name` received, in order. */
const bodiesAt = (name: string) =>
  endpoint.app.requests.filter((r) => r.path === `/hook/${name}`).map((r) => r.body.toString());
const openTexts = (w: World) => w.pushes.open.map((p) => p.text).sort();
const find = (w: World, text: string) => w.pushes.open.find((p) => p.text === text)!;
/**
 * Waits in real time (the full keys' tries, a push's timeout, a real HTTP round trip: slow on a
 * loaded machine) until `done` or `orAsync` holds, at most 10 s.
 */
async function eventuallyPushed(
  done: () => boolean,
  orAsync: () => Promise<boolean> = () => Promise.resolve(false),
): Promise<boolean> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    if (done() || (await orAsync())) return true;
    await new Promise((r) => setTimeout(r, FULL_KEY_RETRY_MS / 5));
  }
  return done() || (await orAsync());
}

/** Whether `done` comes to hold within eight of the full keys' tries (real time): false expected. */
async function pushedSoon(done: () => boolean): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    if (done()) return true;
    await new Promise((r) => setTimeout(r, FULL_KEY_RETRY_MS / 5));
  }
  return done();
}

/** Lets the async slot takes run (each a read and a compare-and-set on the twin). */
const quiet = () => settle(() => false, 30);

afterEach(() => {
  vi.useRealTimers();
});

describe("per-key concurrency on a pushed group", () => {
  it("pushes one message of a key at a time, other keys' beside it; its next goes when it is settled", async () => {
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"], ["b1", "b"], ["a3", "a"], ["n1", null]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    expect(await settle(() => w.pushes.open.length === 3)).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a1", "b1", "n1"]);
    await ack(w, find(w, "a1"));
    expect(await settle(() => w.pushes.started.includes("a2"))).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a2", "b1", "n1"]);
    await ack(w, find(w, "a2"));
    expect(await settle(() => w.pushes.started.includes("a3"))).toBe(true);
    // Key a's messages went in publish order, one at a time, none delivered twice.
    expect(w.pushes.started.filter((t) => t.startsWith("a"))).toEqual(["a1", "a2", "a3"]);
    expect(w.pushes.open.find((p) => p.text === "a3")!.delivery.deliveryCount).toBe(1);
  });

  it("allows `concurrency` pushes of a key open, never more, under the group's maxConcurrency", async () => {
    const w = await world();
    await publish(w, ...Array.from({ length: 6 }, (_, i): [string, string] => [`a${i}`, "a"]));
    await publish(w, ["b0", "b"], ["b1", "b"], ["b2", "b"]);
    // The group's own cap of 3 pushes: two of a, and one of b.
    await pushWith(w, keyed("http://127.0.0.1:9/a", 2, 3));
    expect(await settle(() => w.pushes.open.length === 3)).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a0", "a1", "b0"]);
    // b0's push ends unsettled (as after a timeout): its lease, and its slot of b, run on.
    find(w, "b0").end();
    await ack(w, find(w, "a0"));
    expect(await settle(() => w.pushes.started.includes("a2"))).toBe(true);
    await quiet();
    // b1 takes b's second slot; a3 and b2 wait: a's two slots are taken, b's too (b0's lease
    // and b1), and the group's three pushes are open.
    expect(openTexts(w)).toEqual(["a1", "a2", "b1"]);
    await quiet();
    expect([...w.pushes.started].sort()).toEqual(["a0", "a1", "a2", "b0", "b1"]);
  });

  it("finds a slot freed through another gateway within FULL_KEY_RETRY_MS", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    await quiet();
    // Another gateway acknowledged a1: its slot moved there, nothing told this one.
    const a1 = find(w, "a1");
    await w.memory.broker.ack(group, a1.delivery);
    await w.memory.context.flow.leaseMoved(group, a1.delivery.streamSeq, 0);
    await quiet();
    expect(w.pushes.started).toEqual(["a1"]);
    vi.advanceTimersByTime(FULL_KEY_RETRY_MS);
    expect(await settle(() => w.pushes.started.length === 2)).toBe(true);
    expect(w.pushes.started).toEqual(["a1", "a2"]);
  });

  it("holds a message of a full key unpushed and uncounted, and gives it back after MAX_HOLD_MS as a holdback", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    await quiet();
    const a2Seq = 2;
    // Held, still leased to this gateway: another gateway's pull finds nothing.
    expect((await w.memory.broker.progress(group))?.inFlight).toBe(2);
    for (let ms = 0; ms < MAX_HOLD_MS; ms += FULL_KEY_RETRY_MS) {
      w.memory.advance(FULL_KEY_RETRY_MS);
      vi.advanceTimersByTime(FULL_KEY_RETRY_MS);
      await settle(() => false, 5);
    }
    expect(
      await settle(async () => (await w.memory.context.pushLedger.holdbacks(group, a2Seq)) === 1),
    ).toBe(true);
    expect(w.pushes.started).toEqual(["a1"]);
    // Back after its retry: pushed once a1 settles, as the consumer's first delivery of it.
    await ack(w, find(w, "a1"));
    for (let i = 0; i < 8 && !w.pushes.started.includes("a2"); i++) {
      w.memory.advance(FULL_KEY_RETRY_MS);
      vi.advanceTimersByTime(FULL_KEY_RETRY_MS);
      w.memory.broker.pump();
      await settle(() => w.pushes.started.includes("a2"), 20);
    }
    const a2 = find(w, "a2");
    expect(a2.delivery.deliveryCount).toBe(2);
    const [seen] = await w.memory.context.flow.seenCounts(group, [a2.delivery]);
    expect(seen!.deliveryCount).toBe(1);
  });

  it("holds at most MAX_HELD_PER_GROUP for full keys; another key's messages behind them are still pulled and pushed", async () => {
    const w = await world();
    const backlog = Array.from({ length: 60 }, (_, i): [string, string] => [`a${i}`, "a"]);
    await publish(
      w,
      ...backlog,
      ["b1", "b"],
      ...backlog.map(([t, k]): [string, string] => [`${t}x`, k]),
    );
    await publish(w, ["b2", "b"]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1, 5));
    expect(await settle(() => w.pushes.started.includes("b1"), 2000)).toBe(true);
    await quiet();
    expect(w.pushes.started.filter((t) => t.startsWith("a"))).toEqual(["a0"]);
    // Pulled: the pushes open, and what is held, bounded.
    const inFlight = (await w.memory.broker.progress(group))?.inFlight ?? 0;
    expect(inFlight).toBeLessThanOrEqual(w.pushes.open.length + MAX_HELD_PER_GROUP);
    expect(inFlight).toBeGreaterThan(61);
    // b2, past the bound, comes once what is held went back: here, once b1 settles and key a's
    // held messages are given back (MAX_HOLD_MS) and pulled past.
    expect(w.pushes.started).not.toContain("b2");
  });
});

describe("a pushed group's per-key limit changed", () => {
  it("lifted: what waited for its key is pushed at the next try", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    await quiet();
    await pushWith(w, { ...keyed("http://127.0.0.1:9/a", 1), flowControl: null });
    vi.advanceTimersByTime(FULL_KEY_RETRY_MS);
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    expect(openTexts(w)).toEqual(["a1", "a2"]);
  });

  it("gives back a slot taken before flowControl was lifted, so a limit set again finds it free", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const w = await world();
    await publish(w, ["a1", "a"], ["b1", "b"]);
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    await quiet();
    // Lifted while a1 and b1 are pushed; a1 is acknowledged (its lease ends), b1 settled.
    await pushWith(w, { ...keyed("http://127.0.0.1:9/a", 1), flowControl: null });
    await ack(w, find(w, "a1"));
    const b1 = find(w, "b1");
    await w.memory.broker.ack(group, b1.delivery);
    await w.memory.context.flow.settled(group, b1.delivery.streamSeq);
    b1.end();
    // Set again: each key's next message takes the slot at once, not at a1's or b1's lease end.
    await pushWith(w, keyed("http://127.0.0.1:9/a", 1));
    await publish(w, ["a2", "a"], ["b2", "b"]);
    w.memory.broker.pump();
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    expect(openTexts(w)).toEqual(["a2", "b2"]);
  });
});

describe("a pushed group's per-key slot with the real Pusher", () => {
  it("is kept after a push that timed out, until its message may come back: its handler may still run", async () => {
    const w = await world(true);
    const url = endpoint.app.hookRoute("flow-timeout", 200, () => 1500);
    await publish(w, ["a1", "a"], ["a2", "a"]);
    const push = { url, maxConcurrency: 10, timeoutSeconds: 1, autoAck: true };
    await pushWith(w, { ...keyed(url, 1), push });
    const pushed = () => endpoint.app.requests.filter((r) => r.path === "/hook/flow-timeout");
    expect(await eventuallyPushed(() => pushed().length === 1)).toBe(true);
    // Past the push's timeout (real time), its slot moved with its lease to its retry, 5 s on
    // (the twins' clock): a2 waits.
    const slots = new KeySlots(w.memory.broker.flowSlots, w.memory.now);
    const keyA = flowKeyHash({ headers: { tenant: "a" } } as unknown as StoredMessage, {
      key: "tenant",
      concurrency: 1,
      rate: null,
      ordered: false,
    })!;
    const movedToRetry = async () =>
      (await slots.holders(group, keyA)).some((h) => h.untilMs >= w.memory.now() + 4_000);
    expect(await eventuallyPushed(() => false, movedToRetry)).toBe(true);
    await quiet();
    expect(pushed().map((r) => r.body.toString())).toEqual(["a1"]);
    // Its lease (1 s + 2 s) moved to its retry (5 s after the timeout), the slot with it: then
    // key a's next push goes (a1's retry, or a2, given back meanwhile after half a lease held).
    w.memory.advance(6_000);
    expect(await eventuallyPushed(() => pushed().length >= 2)).toBe(true);
  });

  it("is given back by a push held back for retry.initialDelaySeconds: the key's next is looked at at once", async () => {
    const w = await world(true);
    const url = endpoint.app.hookRoute("flow-initial", 200);
    await publish(w, ["a1", "a"], ["a2", "a"]);
    const later = keyed(url, 1);
    await pushWith(w, { ...later, retry: { ...later.retry, initialDelaySeconds: 5 } });
    // Both held back unpushed, one after the other: the first gave its slot back.
    expect(await eventuallyPushed(() => w.pushes.finished.length === 2)).toBe(true);
    expect(endpoint.app.requests.filter((r) => r.path === "/hook/flow-initial")).toHaveLength(0);
    w.memory.advance(5_000);
    w.memory.broker.pump();
    const pushed = () => endpoint.app.requests.filter((r) => r.path === "/hook/flow-initial");
    expect(await eventuallyPushed(() => pushed().length === 2)).toBe(true);
    expect(pushed().map((r) => r.body.toString())).toEqual(["a1", "a2"]);
    expect(pushed().map((r) => r.headers["ce-vqsdeliverycount"])).toEqual(["1", "1"]);
  });

  it("is given back when a failed push is released for its retry: the key's next message goes meanwhile", async () => {
    const w = await world(true);
    let calls = 0;
    const url = endpoint.app.hookRoute("flow-release", (body) =>
      body === "a1" && ++calls === 1 ? 500 : 200,
    );
    await publish(w, ["a1", "a"], ["a2", "a"]);
    await pushWith(w, keyed(url, 1));
    const pushed = () => bodiesAt("flow-release");
    // a1 fails (back in 5 s: its retry), a2 takes the freed slot and succeeds (autoAck).
    expect(await eventuallyPushed(() => w.pushes.finished.length === 2)).toBe(true);
    expect(pushed()).toEqual(["a1", "a2"]);
    // a1's retry takes the slot a2's acknowledgement gave back.
    w.memory.advance(5_000);
    w.memory.broker.pump();
    expect(await eventuallyPushed(() => pushed().length === 3)).toBe(true);
    expect(pushed()[2]).toBe("a1");
  });
});

describe("a rate per key on a pushed group", () => {
  it("pushes a key's next when its rate has room, other keys meanwhile, as delivery 1; the retry wakes with the room", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "setTimeout", "clearTimeout"] });
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"], ["b1", "b"], ["b2", "b"]);
    // One per 10 s per key, no concurrency limit: a1 and b1 take their keys' room now.
    const roomAt = w.memory.now() + 10_000;
    await pushWith(w, rated("http://127.0.0.1:9/a", 1, 10));
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a1", "b1"]);
    // Settled: no slot to wait for, only the rate. Tried at every FULL_KEY_RETRY_MS meanwhile,
    // still leased here (not released: no delivery counted).
    await ack(w, find(w, "a1"));
    await ack(w, find(w, "b1"));
    w.memory.advance(100);
    while (roomAt - w.memory.now() >= FULL_KEY_RETRY_MS) {
      w.memory.advance(FULL_KEY_RETRY_MS);
      vi.advanceTimersByTime(FULL_KEY_RETRY_MS);
      await quiet();
    }
    expect(w.pushes.started).toEqual(["a1", "b1"]);
    expect((await w.memory.broker.progress(group))?.inFlight).toBe(2);
    // The room comes between two tries: the wake at the room pushes them, not the next try.
    const left = roomAt - w.memory.now();
    expect(left).toBeGreaterThan(0);
    w.memory.advance(left);
    vi.advanceTimersByTime(left);
    expect(await settle(() => w.pushes.started.length === 4)).toBe(true);
    expect(openTexts(w)).toEqual(["a2", "b2"]);
    expect(find(w, "a2").delivery.deliveryCount).toBe(1);
    expect(find(w, "b2").delivery.deliveryCount).toBe(1);
  });

  it("counts a redelivery against the key's rate, as on a polled group", async () => {
    const w = await world(true);
    let calls = 0;
    const url = endpoint.app.hookRoute("rate-retry", (body) =>
      body === "a1" && ++calls === 1 ? 500 : 200,
    );
    await publish(w, ["a1", "a"], ["a2", "a"]);
    // Two per 10 s, a burst of 2: a1 and a2 may go at once.
    const s = rated(url, 2, 10, 2);
    await pushWith(w, { ...s, retry: { ...s.retry, afterSeconds: 1 } });
    const pushed = () => bodiesAt("rate-retry");
    expect(await eventuallyPushed(() => w.pushes.finished.length === 2)).toBe(true);
    expect([...pushed()].sort()).toEqual(["a1", "a2"]);
    // a1 failed; its retry (1 s on) finds no room: the two hand-outs took the key's burst.
    w.memory.advance(1_000);
    w.memory.broker.pump();
    expect(await pushedSoon(() => pushed().length > 2)).toBe(false);
    // Room for one more 5 s after the first two (10 s / 2).
    w.memory.advance(4_000);
    expect(await eventuallyPushed(() => pushed().length === 3)).toBe(true);
    // The request answered 500 is the one retried.
    expect(pushed()[2]).toBe("a1");
  });
});

describe("ordered per key on a pushed group", () => {
  it("pushes one message of a key at a time in publish order, other keys beside it", async () => {
    const w = await world();
    await publish(w, ["a1", "a"], ["a2", "a"], ["b1", "b"], ["a3", "a"], ["b2", "b"]);
    await pushWith(w, ordered("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a1", "b1"]);
    await ackSettled(w, find(w, "b1"));
    expect(await settle(() => w.pushes.started.includes("b2"))).toBe(true);
    await ackSettled(w, find(w, "a1"));
    expect(await settle(() => w.pushes.started.includes("a2"))).toBe(true);
    await quiet();
    expect(openTexts(w)).toEqual(["a2", "b2"]);
    await ackSettled(w, find(w, "a2"));
    expect(await settle(() => w.pushes.started.includes("a3"))).toBe(true);
    expect(w.pushes.started.filter((t) => t.startsWith("a"))).toEqual(["a1", "a2", "a3"]);
    expect(find(w, "a3").delivery.deliveryCount).toBe(1);
  });

  it("pushes a failed head again before the key's later messages (its slot freed, its place kept)", async () => {
    const w = await world(true);
    let calls = 0;
    const url = endpoint.app.hookRoute("ordered-retry", (body) =>
      body === "a1" && ++calls === 1 ? 500 : 200,
    );
    await publish(w, ["a1", "a"], ["a2", "a"], ["b1", "b"]);
    await pushWith(w, ordered(url));
    const pushed = () => bodiesAt("ordered-retry");
    // a1 fails (back in 5 s); b1 goes; a2 waits for its head, though a1 holds no slot.
    expect(await eventuallyPushed(() => w.pushes.finished.length === 2)).toBe(true);
    expect([...pushed()].sort()).toEqual(["a1", "b1"]);
    expect(await pushedSoon(() => pushed().length > 2)).toBe(false);
    w.memory.advance(5_000);
    w.memory.broker.pump();
    expect(await eventuallyPushed(() => pushed().length === 4)).toBe(true);
    expect(pushed().slice(2)).toEqual(["a1", "a2"]);
    const a2 = endpoint.app.requests.filter((r) => r.path === "/hook/ordered-retry")[3]!;
    expect(a2.headers["ce-vqsdeliverycount"]).toBe("1");
  });

  it("lets the key go on once its head is dead-lettered after maxDeliveries", async () => {
    const w = await world(true);
    const url = endpoint.app.hookRoute(
      "ordered-dead",
      (() => {
        let n = 0;
        return () => (++n === 1 ? 500 : 200);
      })(),
    );
    await publish(w, ["a1", "a"], ["a2", "a"]);
    const s = ordered(url);
    await pushWith(w, { ...s, deadLetter: { topic: "orders-dead", maxDeliveries: 1 } });
    const pushed = () => bodiesAt("ordered-dead");
    expect(await eventuallyPushed(() => w.pushes.finished.length === 1)).toBe(true);
    expect(await pushedSoon(() => pushed().length > 1)).toBe(false);
    // a1's retry is its second delivery: dead-lettered, it leaves its key's order; a2 goes.
    w.memory.advance(5_000);
    w.memory.broker.pump();
    expect(await eventuallyPushed(() => pushed().length === 2)).toBe(true);
    expect(pushed()).toEqual(["a1", "a2"]);
  });

  it("lets the key go on when its head expires while it is pushed", async () => {
    const w = await world(true);
    const url = endpoint.app.hookRoute(
      "ordered-expiry",
      (body) => (body === "a1" ? 500 : 200),
      () => 300,
    );
    await w.memory.publishId(group, "a1", { retentionSeconds: 60, headers: { tenant: "a" } });
    w.memory.advance(1);
    await publish(w, ["a2", "a"]);
    await pushWith(w, ordered(url));
    const pushed = () => bodiesAt("ordered-expiry");
    expect(await eventuallyPushed(() => pushed().length === 1)).toBe(true);
    // a1 expires while its push is under way (answered in 300 ms, 500): its slot frees, and
    // the key's head, gone from the log, no longer blocks a2; a1 is not pushed again.
    w.memory.advance(61_000);
    expect(await eventuallyPushed(() => w.pushes.finished.length === 1)).toBe(true);
    w.memory.broker.pump();
    expect(await eventuallyPushed(() => pushed().length === 2)).toBe(true);
    expect(pushed()).toEqual(["a1", "a2"]);
  });
});

// The push scheduler's rules on the in-memory twins (no nats-server): the gateway's PushScheduler
// fed by MemoryPushFeeds from MemorySettingsStore, on MemoryBroker's clock. A namespace's cap of
// pushes in flight on a gateway, the order a freed slot is given in, held messages kept leased,
// holdbacks, a seek's stale deliveries, slots freed at an acknowledgement, and patterns. The
// adapter's side (the cap, the held lease renewed by JetStream, the acknowledgement's hook) keeps
// its end-to-end cases in test/integration/service/namespace-caps.test.ts.
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { MemoryQueueAdmin } from "../../../src/memory/memory-queue-admin.js";
import { MemorySettingsStore } from "../../../src/memory/memory-settings-store.js";
import type { ConsumerSettings } from "../../../src/queue/settings/consumer-settings.js";
import { makeNamespace, type GroupAddress, type Namespace } from "../../../src/queue/namespace.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";
import { eventually } from "../../helpers/wait.js";
import {
  memoryPusher,
  scheduledPushes,
  settle,
  usePushEndpoint,
  type ScheduledPushes,
} from "../../helpers/memory-pusher.js";

const SECRET = "push-scheduler-secret-push-scheduler!";
const A = makeNamespace("team", "prj_a", "production", null);
const B = makeNamespace("team", "prj_b", "production", null);
const at = (namespace: Namespace, topic: string, group = "g"): GroupAddress => ({
  namespace,
  topic,
  group,
});

const endpoint = usePushEndpoint();

function pushedTo(
  url: string,
  maxConcurrency = 5,
  more: Partial<ConsumerSettings> = {},
): ConsumerSettings {
  return {
    push: { url, maxConcurrency, timeoutSeconds: 30, autoAck: true },
    retry: { afterSeconds: 1, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
    deadLetter: null,
    flowControl: null,
    ...more,
  };
}

interface World {
  readonly memory: MemoryQueue;
  readonly settings: MemorySettingsStore;
  readonly pushes: ScheduledPushes;
}

/** The twins with a namespace push cap of `cap`; the real Pusher for the groups `passes` names. */
async function world(cap: number, passes?: (g: GroupAddress) => boolean): Promise<World> {
  const settings = new MemorySettingsStore(() => memory.now());
  const memory = memoryQueue({
    secret: SECRET,
    settingsOf: (g) => settings.effective(g.namespace, g.topic, g.group),
  });
  const push = passes ? memoryPusher(memory, endpoint.client, SECRET) : undefined;
  const pushes = await scheduledPushes(memory, settings, {
    cap,
    ...(push ? { push } : {}),
    ...(passes ? { passes } : {}),
  });
  onTestFinished(async () => {
    // No more pushes start once the feeds are stopped; those open end here.
    const stopped = pushes.feeds.stop();
    await settle(() => {
      for (const p of [...pushes.open]) p.end();
      return pushes.open.length === 0;
    });
    await stopped;
  });
  return { memory, settings, pushes };
}

/** Publishes `texts` to the group's topic, the clock moving a millisecond after each. */
async function publish(w: World, g: GroupAddress, ...texts: string[]): Promise<void> {
  for (const text of texts) {
    await w.memory.publish(g, text);
    w.memory.advance(1);
  }
}

/** Stores `settings` for the group; its feed opens (the topic must exist). */
async function push(w: World, g: GroupAddress, settings: ConsumerSettings): Promise<void> {
  await w.settings.put(g.namespace, g.topic, g.group, settings);
  await w.pushes.feeds.resync();
}

const openOf = (w: World, ns: Namespace) =>
  w.pushes.open.filter((p) => p.group.namespace.key === ns.key);

afterEach(() => {
  vi.useRealTimers();
});

describe("a namespace's pushes in flight on a gateway", () => {
  it("stop at its cap while its endpoint never answers; each group holds one ahead; another namespace is pushed", async () => {
    const w = await world(2);
    const groups = ["g1", "g2", "g3"].map((g) => at(A, "orders", g));
    for (const g of groups) {
      await publish(w, g, `make ${g.group}`);
      await push(w, g, pushedTo("http://127.0.0.1:9/a"));
    }
    await publish(w, groups[0]!, ...Array.from({ length: 20 }, (_, i) => `a-${i}`));
    const b = at(B, "orders");
    await publish(w, b, "b make");
    await push(w, b, pushedTo("http://127.0.0.1:9/b"));
    await publish(w, b, ...Array.from({ length: 10 }, (_, i) => `b-${i}`));
    // B's endpoint answers: each of its pushes ends as it starts.
    const bPushed = () => w.pushes.started.filter((t) => t.startsWith("b")).length;
    expect(
      await settle(() => {
        for (const p of openOf(w, B)) p.end();
        return bPushed() === 11;
      }),
    ).toBe(true);
    expect(openOf(w, A)).toHaveLength(2);
    expect(w.pushes.started.filter((t) => !t.startsWith("b"))).toHaveLength(2);
    // Pulled from the store: the two pushed and one held by each of the three groups.
    let pulled = 0;
    for (const g of groups) pulled += (await w.memory.broker.progress(g))?.inFlight ?? 0;
    expect(pulled).toBe(5);
  });

  it("below the cap, ask each group to pull its share of the free slots (rounded up)", async () => {
    const w = await world(4);
    const feed = { wake: () => undefined, epoch: () => 0 };
    const settings = pushedTo("http://127.0.0.1:9/a", 5) as Parameters<
      typeof w.pushes.scheduler.join
    >[1];
    const g1 = w.pushes.scheduler.join(at(A, "t1"), settings, feed);
    expect(g1.demand()).toBe(4);
    const g2 = w.pushes.scheduler.join(at(A, "t2"), settings, feed);
    const g3 = w.pushes.scheduler.join(at(A, "t3"), settings, feed);
    expect([g1.demand(), g2.demand(), g3.demand()]).toEqual([2, 2, 2]);
    // Another namespace's groups take nothing of A's share.
    w.pushes.scheduler.join(at(B, "t1"), settings, feed);
    expect(g1.demand()).toBe(2);
    for (const g of [g1, g2, g3]) g.close();
  });

  it("hand a freed slot to the namespace's oldest held message, whichever of its groups", async () => {
    const w = await world(2);
    const [t1, t2] = [at(A, "t1"), at(A, "t2")];
    for (const g of [t1, t2]) {
      await publish(w, g, "make");
      await push(w, g, pushedTo("http://127.0.0.1:9/a"));
    }
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    const published = ["a", "b", "c", "d", "e", "f"];
    for (const [i, text] of published.entries()) await publish(w, i % 2 === 0 ? t2 : t1, text);
    for (let n = 2; n < 2 + published.length; n++) {
      w.pushes.open[0]!.end();
      expect(await settle(() => w.pushes.started.length > n && w.pushes.open.length === 2)).toBe(
        true,
      );
    }
    expect(w.pushes.started.slice(2)).toEqual(published);
  });

  it("place a redelivery by when it was pulled, not by its publish time", async () => {
    const w = await world(1);
    const [t1, t2] = [at(A, "t1"), at(A, "t2")];
    await publish(w, t1, "old");
    await publish(w, t2, "block");
    await push(w, t2, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    // "old" comes back as a redelivery (its first lease given back), after "new" was published.
    const first = await w.memory.broker.pull(t1, 1);
    await w.memory.broker.setLease(t1, first![0]!, 0);
    await publish(w, t2, "new");
    await push(w, t1, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 1 && w.pushes.started.length === 1)).toBe(
      true,
    );
    for (let n = 1; n < 3; n++) {
      w.pushes.open[0]!.end();
      expect(await settle(() => w.pushes.started.length > n)).toBe(true);
    }
    expect(w.pushes.started).toEqual(["block", "new", "old"]);
  });
});

describe("a message held at its namespace's cap", () => {
  it("stays leased while it waits, past several leases, and is pushed once, as delivery 1", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const w = await world(1);
    const [t1, t2] = [at(A, "t1"), at(A, "t2")];
    await publish(w, t1, "block");
    await push(w, t1, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    // Leased to its push for an hour, as the Pusher would lease it.
    await w.memory.broker.setLease(t1, w.pushes.open[0]!.delivery, 3_600_000);
    await publish(w, t2, "held");
    await push(w, t2, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(async () => (await w.memory.broker.progress(t2))?.inFlight === 1)).toBe(
      true,
    );
    // Three of the store's leases (60 s each) pass, in steps shorter than half of one.
    for (let ms = 0; ms < 180_000; ms += 10_000) {
      w.memory.advance(10_000);
      vi.advanceTimersByTime(10_000);
      w.memory.broker.pump();
      await settle(() => false, 5);
    }
    expect(w.pushes.started).toEqual(["block"]);
    // Another gateway pulling the group finds it leased still.
    expect(await w.memory.broker.pull(t2, 1)).toEqual([]);
    w.pushes.open[0]!.end();
    expect(await settle(() => w.pushes.started.length === 2)).toBe(true);
    expect(w.pushes.open[0]!.delivery.deliveryCount).toBe(1);
    // Its lease never ran out while held: no redelivery of it waits to be pushed next.
    w.pushes.open[0]!.end();
    await settle(() => false, 20);
    expect(w.pushes.started).toEqual(["block", "held"]);
  });

  it("is given back as a holdback when its group stops being pushed: its push says delivery 1, and maxDeliveries 1 keeps it", async () => {
    const t2 = at(A, "t2");
    const w = await world(2, (g) => g.topic === t2.topic);
    const t1 = at(A, "t1");
    await publish(w, t1, "block 1", "block 2");
    await push(w, t1, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    await publish(w, t2, "released");
    const url = endpoint.app.hookRoute("holdback", 200);
    const oneTry = pushedTo(url, 5, { deadLetter: { topic: "dlq", maxDeliveries: 1 } });
    await push(w, t2, oneTry);
    expect(await settle(async () => (await w.memory.broker.progress(t2))?.inFlight === 1)).toBe(
      true,
    );
    await w.settings.delete(t2.namespace, t2.topic, t2.group);
    await w.pushes.feeds.resync();
    expect(
      await settle(async () => (await w.memory.context.pushLedger.holdbacks(t2, 1)) === 1),
    ).toBe(true);
    await push(w, t2, oneTry);
    for (const p of [...w.pushes.open]) p.end();
    const pushedThere = () => endpoint.app.requests.filter((r) => r.path === "/hook/holdback");
    // A real HTTP request: waited for in time, not in event-loop turns (a loaded machine).
    expect(await eventually(() => pushedThere().length === 1, 10_000)).toBe(true);
    expect(pushedThere()[0]!.headers["ce-vqsdeliverycount"]).toBe("1");
    expect(await w.memory.context.leaseLedger.deadLettered(t2)).toBe(0);
  });

  it("is dropped, never pushed, once a seek moved its group past it; what comes after is pushed", async () => {
    const w = await world(1);
    const admin = new MemoryQueueAdmin({ broker: w.memory.broker, now: w.memory.now });
    const [t1, t3] = [at(A, "t1"), at(A, "t3")];
    await publish(w, t1, "block");
    await push(w, t1, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(() => w.pushes.open.length === 1)).toBe(true);
    await publish(w, t3, "skipped");
    await push(w, t3, pushedTo("http://127.0.0.1:9/a"));
    expect(await settle(async () => (await w.memory.broker.progress(t3))?.inFlight === 1)).toBe(
      true,
    );
    expect(await admin.seekGroup(t3, "latest")).toBe(true);
    await publish(w, t3, "after");
    w.pushes.open[0]!.end();
    expect(await settle(() => w.pushes.started.length === 2)).toBe(true);
    await settle(() => false, 20);
    expect(w.pushes.started).toEqual(["block", "after"]);
  });
});

describe("a push's slot", () => {
  it("frees at its message's acknowledgement, for at most maxConcurrency pushes still open", async () => {
    const w = await world(2);
    const g = at(A, "orders");
    await publish(w, g, "m0", "m1", "m2", "m3", "m4", "m5");
    await push(w, g, pushedTo("http://127.0.0.1:9/a", 3));
    expect(await settle(() => w.pushes.open.length === 2)).toBe(true);
    const ack = async (text: string) => {
      const p = w.pushes.open.find((o) => o.text === text)!;
      await w.memory.broker.ack(g, p.delivery);
    };
    // Three acknowledged pushes stay open (maxConcurrency), each having freed its slot.
    for (const [i, text] of ["m0", "m1", "m2"].entries()) {
      await ack(text);
      expect(await settle(() => w.pushes.started.length === 3 + i)).toBe(true);
    }
    expect(w.pushes.open.map((p) => p.text)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    // A fourth does not free one while they are open; its push ending does.
    await ack("m3");
    await settle(() => false, 20);
    expect(w.pushes.started).toHaveLength(5);
    w.pushes.open.find((o) => o.text === "m3")!.end();
    expect(await settle(() => w.pushes.started.length === 6)).toBe(true);
  });
});

describe("a pattern's push settings", () => {
  it("apply to a topic created after they were stored", async () => {
    const w = await world(0);
    await push(w, at(A, "orders-*"), pushedTo("http://127.0.0.1:9/a"));
    const later = at(A, "orders-eu");
    await publish(w, later, "first");
    await w.pushes.feeds.resync(); // as the adapter does when JetStream announces the stream
    expect(await settle(() => w.pushes.started.length === 1)).toBe(true);
    expect(w.pushes.open[0]!.group).toEqual(later);
  });
});

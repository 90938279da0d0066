// Flow control's concurrency, rate and order per key on a PUSHED group, on a real nats-server with two gateways
// pushing the same group: a real endpoint runs the real client's handleCallback (which
// acknowledges through the first gateway, whichever gateway pushed), and records what of each key
// runs at once. A key at concurrency 1 never has two handlers running, other keys go while one
// key's handler stalls, and a message that waited for its key is pushed as delivery 1. The rules
// in detail on the twins: test/unit/queue/push-flow-control-rules.test.ts.
import { QueueClient } from "@vercel/queue";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../../src/nats/core/naming.js";
import { MAX_HELD_PER_GROUP } from "../../../src/queue/flow-control/flow-gate.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { metricValue } from "../../helpers/metrics.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";
import { eventually } from "../../helpers/wait.js";

const fx = useGateways(2);
const NS = makeNamespace("team_a", "prj_1", "production", null);
let app: PushApp;
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
});

afterAll(async () => {
  await app?.close();
});

function sender(i = 0): QueueClient {
  return new QueueClient({
    region: "iad1",
    token,
    deploymentId: null,
    resolveBaseUrl: () => new URL(fx.gateways[i]!.url),
  });
}

/** Stores the settings, and waits until both gateways have them. */
async function settings(topic: string, body: Record<string, unknown>): Promise<void> {
  const res = await api(fx.gateways[0]!.url, token).call(
    "PUT",
    `${topic}/consumer/workers/settings`,
    { headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
  expect(res.status, await res.clone().text()).toBe(200);
  for (const gw of fx.gateways) {
    expect(
      await eventually(() => gw.gateway.settings.effective(NS, topic, "workers") !== null),
    ).toBe(true);
  }
}

interface Run {
  readonly key: string;
  readonly n: number;
  readonly deliveryCount: number;
  /** When its handler started (this process's clock, ms). */
  readonly at: number;
}

/**
 * A handleCallback route that records each handler run, how many of each key run at once (the
 * most ever), and waits for `hold(key, n)` before it returns (and the client acknowledges).
 */
function keyedRoute(topic: string, hold: (key: string, n: number) => Promise<void>) {
  const runs: Run[] = [];
  const now = new Map<string, number>();
  const most = new Map<string, number>();
  const all = { now: 0, most: 0 };
  const url = app.fetchRoute(topic, {
    handler: async (payload, meta) => {
      const { key, n } = payload as { key: string; n: number };
      const running = (now.get(key) ?? 0) + 1;
      now.set(key, running);
      most.set(key, Math.max(most.get(key) ?? 0, running));
      all.now++;
      all.most = Math.max(all.most, all.now);
      runs.push({ key, n, deliveryCount: meta.deliveryCount, at: performance.now() });
      try {
        await hold(key, n);
      } finally {
        now.set(key, (now.get(key) ?? 1) - 1);
        all.now--;
      }
    },
  });
  return { url, runs, most, all };
}

const pushed = (runs: readonly Run[], key: string) =>
  runs.filter((r) => r.key === key).map((r) => r.n);

describe("per-key concurrency on a pushed group, two gateways", () => {
  it("never runs two handlers of a key at concurrency 1, whichever gateway pushes; each message once, as delivery 1", async () => {
    const topic = uniqueName("push-flow");
    // Each handler runs a little while, so that a second push of its key would overlap it.
    const route = keyedRoute(topic, () => new Promise((r) => setTimeout(r, 40)));
    await settings(topic, {
      push: { url: route.url, maxConcurrency: 8 },
      flowControl: { key: "tenant", concurrency: 1 },
    });
    const SUCCESS = 'vqs_push_requests_total{outcome="success"}';
    const before = await Promise.all(
      fx.gateways.map(async (g) => (await metricValue(g.metricsUrl, SUCCESS)) || 0),
    );
    const keys = ["a", "b", "c"];
    const deltas = async () =>
      Promise.all(
        fx.gateways.map(
          async (g, i) => ((await metricValue(g.metricsUrl, SUCCESS)) || 0) - before[i]!,
        ),
      );
    // Rounds of 8 messages per key, sent through both gateways, until both gateways have pushed
    // some (JetStream gives the group's messages to whichever pull is waiting: on a loaded machine
    // one gateway's pulls may take a whole round). The limit must hold across them.
    const ROUND = 8;
    let total = 0;
    for (let round = 0; round < 4; round++) {
      const sends: Promise<unknown>[] = [];
      for (let n = round * ROUND; n < (round + 1) * ROUND; n++) {
        for (const key of keys) {
          sends.push(sender(n % 2).send(topic, { key, n }, { headers: { tenant: key } }));
        }
      }
      await Promise.all(sends);
      total += ROUND * keys.length;
      expect(await eventually(() => route.runs.length >= total, 30_000)).toBe(true);
      // Counted once each push's answer is in (the last ones just after their handlers ran).
      await expect.poll(async () => (await deltas()).reduce((x, y) => x + y, 0)).toBe(total);
      if ((await deltas()).every((x) => x > 0)) break;
    }
    const sent = Array.from({ length: total / keys.length }, (_, n) => n);
    for (const key of keys) {
      expect(route.most.get(key)).toBe(1);
      expect(pushed(route.runs, key).sort((x, y) => x - y)).toEqual(sent);
    }
    expect(route.runs.every((r) => r.deliveryCount === 1)).toBe(true);
    const d = await deltas();
    expect(
      d.every((x) => x > 0),
      `pushes per gateway: ${d.join(", ")}`,
    ).toBe(true);
  });

  it("pushes other keys while one key's handler stalls; the stalled key's next waits unpushed, then goes as delivery 1", async () => {
    const topic = uniqueName("push-flow-stall");
    let unstall: () => void = () => undefined;
    const stalled = new Promise<void>((r) => (unstall = r));
    const route = keyedRoute(topic, (key) => (key === "slow" ? stalled : Promise.resolve()));
    await settings(topic, {
      push: { url: route.url, maxConcurrency: 4 },
      flowControl: { key: "tenant", concurrency: 1 },
    });
    const client = sender();
    await client.send(topic, { key: "slow", n: 1 }, { headers: { tenant: "slow" } });
    expect(await eventually(() => pushed(route.runs, "slow").length === 1)).toBe(true);
    await client.send(topic, { key: "slow", n: 2 }, { headers: { tenant: "slow" } });
    for (let n = 1; n <= 6; n++) {
      await client.send(
        topic,
        { key: `fast-${n % 3}`, n },
        { headers: { tenant: `fast-${n % 3}` } },
      );
    }
    // Six messages of other keys behind slow 2, in a group of 4 pushes, one of them stalled.
    expect(
      await eventually(() => route.runs.filter((r) => r.key.startsWith("fast")).length === 6),
    ).toBe(true);
    expect(pushed(route.runs, "slow")).toEqual([1]);
    // slow 2 is held, for its key, by whichever gateway pulled it: counted, with no label per key.
    const held = async (series: string) =>
      (await Promise.all(fx.gateways.map((g) => metricValue(g.metricsUrl, series)))).reduce(
        (x, y) => x + (y || 0),
        0,
      );
    await expect.poll(() => held("vqs_flow_held_messages")).toBe(1);
    await expect.poll(() => held("vqs_flow_waiting_keys")).toBe(1);
    unstall();
    expect(await eventually(() => pushed(route.runs, "slow").length === 2, 20_000)).toBe(true);
    expect(pushed(route.runs, "slow")).toEqual([1, 2]);
    // Waiting for its key counted no delivery.
    expect(route.runs.find((r) => r.key === "slow" && r.n === 2)!.deliveryCount).toBe(1);
    expect(route.most.get("slow")).toBe(1);
  });

  it("gives the consumer maxConcurrency + MAX_HELD_PER_GROUP as max_ack_pending, room for held messages", async () => {
    const topic = uniqueName("push-flow-cap");
    const route = keyedRoute(topic, () => Promise.resolve());
    await sender().send(topic, { key: "a", n: 1 }, { headers: { tenant: "a" } });
    await settings(topic, {
      push: { url: route.url, maxConcurrency: 3 },
      flowControl: { key: "tenant", concurrency: 1 },
    });
    expect(await eventually(() => route.runs.length === 1)).toBe(true);
    const nc = await connect({ servers: fx.nats.url });
    try {
      const jsm = await jetstreamManager(nc);
      const names = groupNames("iad1", { namespace: NS, topic, group: "workers" });
      const info = await jsm.consumers.info(names.stream, names.consumer);
      expect(info.config.max_ack_pending).toBe(3 + MAX_HELD_PER_GROUP);
    } finally {
      await nc.close();
    }
  });
});

describe("rate and ordered per key on a pushed group, two gateways", () => {
  it("spaces a key's pushes by its rate, other keys pushed meanwhile, each once as delivery 1", async () => {
    const topic = uniqueName("push-flow-rate");
    const route = keyedRoute(topic, () => Promise.resolve());
    // Two per second, evenly spaced (burst 1): one push of key a every 500 ms at most.
    await settings(topic, {
      push: { url: route.url, maxConcurrency: 8 },
      flowControl: { key: "tenant", rate: { limit: 2, periodSeconds: 1, burst: 1 } },
    });
    const sends: Promise<unknown>[] = [];
    for (let n = 1; n <= 4; n++) {
      sends.push(sender(n % 2).send(topic, { key: "a", n }, { headers: { tenant: "a" } }));
      const other = `other-${n}`;
      sends.push(sender(n % 2).send(topic, { key: other, n }, { headers: { tenant: other } }));
    }
    await Promise.all(sends);
    expect(await eventually(() => route.runs.length === 8, 20_000)).toBe(true);
    const a = route.runs.filter((r) => r.key === "a");
    expect(a.map((r) => r.n).sort()).toEqual([1, 2, 3, 4]);
    // 500 ms apart as the gateways took them; the pushes' own latency may differ a little.
    for (let i = 1; i < a.length; i++) expect(a[i]!.at - a[i - 1]!.at).toBeGreaterThan(400);
    // The other keys did not wait for a's rate: all ran before a's last push.
    const others = route.runs.filter((r) => r.key !== "a");
    expect(Math.max(...others.map((r) => r.at))).toBeLessThan(a[3]!.at);
    // Waiting for its rate counted no delivery.
    expect(route.runs.every((r) => r.deliveryCount === 1)).toBe(true);
  });

  it("pushes an ordered key one at a time in publish order; a failed head is pushed again before the key's next", async () => {
    const topic = uniqueName("push-flow-ordered");
    let failed = false;
    const route = keyedRoute(topic, (key, n) => {
      if (key === "a" && n === 1 && !failed) {
        failed = true;
        return Promise.reject(new Error("the head fails once"));
      }
      return new Promise((r) => setTimeout(r, 20));
    });
    await settings(topic, {
      push: { url: route.url, maxConcurrency: 8 },
      retry: { afterSeconds: 1 },
      flowControl: { key: "tenant", ordered: true },
    });
    // Published in order, through both gateways.
    for (let n = 1; n <= 4; n++) {
      await sender(n % 2).send(topic, { key: "a", n }, { headers: { tenant: "a" } });
    }
    await sender().send(topic, { key: "b", n: 1 }, { headers: { tenant: "b" } });
    expect(await eventually(() => pushed(route.runs, "a").length === 5, 30_000)).toBe(true);
    expect(pushed(route.runs, "a")).toEqual([1, 1, 2, 3, 4]);
    expect(route.most.get("a")).toBe(1);
    const a = route.runs.filter((r) => r.key === "a");
    expect(a.map((r) => r.deliveryCount)).toEqual([1, 2, 1, 1, 1]);
    // Key b was not held behind a's retry.
    expect(await eventually(() => pushed(route.runs, "b").length === 1)).toBe(true);
  });
});

// Long polling (Vqs-Wait-Seconds): a receive with nothing to hand out waits for a message and
// answers as soon as one is there (published through another gateway, or a delayed one coming
// due, or the first of a topic a publish through the same gateway creates), 204 when the wait is over; a client that hangs up leaves nothing leased; a shutting-down
// gateway answers its waiters at once; a thousand waiters share one pull per group.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { startGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { scrape } from "../../helpers/metrics.js";

const fx = useGateways(2);
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
});

afterAll(() => undefined);

const q = (i = 0) => api(fx.gateways[i]!.url, token);

function waitingReceive(gw: number, topic: string, group: string, seconds: number, extra = {}) {
  const started = Date.now();
  return q(gw)
    .receive(topic, group, { "vqs-wait-seconds": String(seconds), ...extra })
    .then(async (res) => ({
      status: res.status,
      ms: Date.now() - started,
      parts: res.status === 200 ? await parts(res) : (await res.text(), []),
    }));
}

describe("long polling", () => {
  it("answers as soon as a message is published through another gateway", async () => {
    const topic = uniqueName("lp");
    await q(0).publish(topic, "warm-up");
    await q(1)
      .receive(topic, "workers")
      .then((r) => r.text()); // the group exists, emptied
    const waiting = waitingReceive(1, topic, "workers", 10);
    await sleep(500);
    await q(0).publish(topic, "hello");
    const got = await waiting;
    expect(got.status).toBe(200);
    expect(got.parts.map((p) => p.body.toString())).toEqual(["hello"]);
    expect(got.parts[0]!.headers.get("vqs-delivery-count")).toBe("1");
    expect(got.ms).toBeGreaterThanOrEqual(400);
    expect(got.ms).toBeLessThan(5000);
  });

  it("answers 204 when the wait is over with nothing", async () => {
    const topic = uniqueName("lp-empty");
    await q().publish(topic, "x");
    await q()
      .receive(topic, "workers")
      .then((r) => r.text());
    const got = await waitingReceive(0, topic, "workers", 1);
    expect(got.status).toBe(204);
    expect(got.ms).toBeGreaterThanOrEqual(900);
    expect(got.ms).toBeLessThan(5000);
  });

  it("wakes for a delayed message when it comes due, and for a topic created meanwhile", async () => {
    const topic = uniqueName("lp-delay");
    await q().publish(topic, "later", { "vqs-delay-seconds": "2" });
    const got = await waitingReceive(0, topic, "workers", 10);
    expect(got.status).toBe(200);
    expect(got.ms).toBeGreaterThanOrEqual(1500);
    const fresh = uniqueName("lp-new");
    const waiting = waitingReceive(1, fresh, "workers", 10);
    await sleep(300);
    await q(0).publish(fresh, "first ever");
    expect((await waiting).parts.map((p) => p.body.toString())).toEqual(["first ever"]);
  });

  it("wakes at once for a topic a publish through its own gateway creates", async () => {
    // Waiters that find no topic look again every second; a publish through their gateway wakes
    // them at once (before, a receive that waited for a new topic's first messages got them up
    // to a second late: bench:tenants' quiet tenant's receive p99 was ~0.8 s from this alone).
    const lags: number[] = [];
    for (let i = 0; i < 5; i++) {
      const fresh = uniqueName("lp-made");
      const waiting = waitingReceive(0, fresh, "workers", 10);
      await sleep(150);
      const published = Date.now();
      await q(0).publish(fresh, "made");
      const got = await waiting;
      expect(got.parts.map((p) => p.body.toString())).toEqual(["made"]);
      lags.push(Date.now() - published);
    }
    lags.sort((a, b) => a - b);
    // Without the wake each lag is ~850 ms or more (the next look is 1 s after the first).
    expect(lags[2]).toBeLessThan(600);
  });

  it("leaves nothing leased when the client hangs up while waiting", async () => {
    const topic = uniqueName("lp-gone");
    await q().publish(topic, "x");
    await q()
      .receive(topic, "workers")
      .then((r) => r.text());
    const abort = new AbortController();
    const gone = fetch(`${fx.gateways[0]!.url}/api/v3/topic/${topic}/consumer/workers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        accept: "multipart/mixed",
        "vqs-wait-seconds": "10",
      },
      signal: abort.signal,
    }).catch(() => null);
    await sleep(300);
    abort.abort();
    await gone;
    await sleep(100);
    await q().publish(topic, "for whoever comes next");
    await sleep(100);
    const res = await q().receive(topic, "workers");
    expect(res.status).toBe(200);
    const [p] = await parts(res);
    expect(p!.body.toString()).toBe("for whoever comes next");
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
  });

  it("takes Vqs-Max-Concurrency into account only for what it hands out", async () => {
    const topic = uniqueName("lp-conc");
    for (const m of ["a", "b"]) await q().publish(topic, m);
    const limit = { "vqs-max-concurrency": "2" };
    const first = await q().receive(topic, "workers", limit);
    expect(first.status).toBe(200);
    await first.text();
    const second = await q().receive(topic, "workers", limit);
    expect(second.status).toBe(200);
    await second.text();
    // At the limit: refused at once, waiting or not.
    const refused = await waitingReceive(0, topic, "workers", 5, limit);
    expect(refused.status).toBe(429);
    // Below it, a waiting receive holds nothing while it waits.
    const topic2 = uniqueName("lp-conc2");
    await q().publish(topic2, "x");
    await q()
      .receive(topic2, "workers")
      .then((r) => r.text());
    const waiting = waitingReceive(0, topic2, "workers", 10, limit);
    await sleep(300);
    const c = await connect({ servers: fx.nats.url });
    const jsm = await jetstreamManager(c);
    const ns = makeNamespace("team_a", "prj_1", "production", null);
    const g = groupNames("iad1", { namespace: ns, topic: topic2, group: "workers" });
    expect((await jsm.consumers.info(g.stream, g.consumer)).num_ack_pending).toBe(1);
    await c.close();
    await q().publish(topic2, "y");
    expect((await waiting).status).toBe(200);
  });

  it("answers every waiter at once with 204 when its gateway shuts down", async () => {
    const gw = await startGateway(fx.nats.url, fx.issuer);
    const topic = uniqueName("lp-close");
    const g = api(gw.url, token);
    await g.publish(topic, "x");
    await g.receive(topic, "workers").then((r) => r.text());
    const waits = Array.from({ length: 20 }, () =>
      g.receive(topic, "workers", { "vqs-wait-seconds": "20" }).then((r) => r.status),
    );
    await sleep(500);
    expect(gw.gateway.jetstream).toBeDefined();
    const started = Date.now();
    await gw.close();
    const statuses = await Promise.all(waits);
    expect(statuses.every((s) => s === 204)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("refuses a bad Vqs-Wait-Seconds with 400 invalid_wait_seconds", async () => {
    const topic = uniqueName("lp-bad");
    for (const bad of ["x", "-1", "21", "1.5", "", "5 s", "0x10"]) {
      const res = await q().receive(topic, "workers", { "vqs-wait-seconds": bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(await errorCode(res)).toBe("invalid_wait_seconds");
    }
  });

  it("holds a thousand waiters on one pull per group, and hands each a message", async () => {
    const groups = Array.from({ length: 10 }, (_, i) => `g${i}`);
    const topic = uniqueName("lp-many");
    await q().publish(topic, "warm-up");
    for (const g of groups)
      await q()
        .receive(topic, g)
        .then((r) => r.text());
    const waits = groups.flatMap((g) =>
      Array.from({ length: 100 }, () => waitingReceive(0, topic, g, 20)),
    );
    await expect
      .poll(() => fx.gateways[0]!.gateway.queue.waitingReceives, { timeout: 15_000 })
      .toBe(1000);
    // One waiting pull per group at the server, however many receives wait.
    const c = await connect({ servers: fx.nats.url });
    const jsm = await jetstreamManager(c);
    const ns = makeNamespace("team_a", "prj_1", "production", null);
    for (const group of groups) {
      const n = groupNames("iad1", { namespace: ns, topic, group });
      expect((await jsm.consumers.info(n.stream, n.consumer)).num_waiting).toBeLessThanOrEqual(2);
    }
    await c.close();
    for (let i = 0; i < 100; i++) await q(1).publish(topic, `m${i}`);
    const results = await Promise.all(waits);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    // Every group got each message once.
    for (let gi = 0; gi < groups.length; gi++) {
      const bodies = results
        .slice(gi * 100, gi * 100 + 100)
        .flatMap((r) => r.parts.map((p) => p.body.toString()))
        .sort();
      expect(bodies).toEqual(Array.from({ length: 100 }, (_, i) => `m${i}`).sort());
    }
  }, 60_000);

  it("lets receives that come back to a followed group join its feed without a pull each", async () => {
    const topic = uniqueName("lp-rejoin");
    await q().publish(topic, "warm-up");
    await q()
      .receive(topic, "g")
      .then((r) => r.text());
    const pulls = async () => {
      const text = await scrape(fx.gateways[0]!.metricsUrl);
      const line = text
        .split("\n")
        .find((l) =>
          l.startsWith('vqs_jetstream_request_duration_seconds_count{operation="pull"}'),
        );
      return Number(line?.split(" ").pop() ?? 0);
    };
    // One waiter opens the group's feed; 200 more come while it is open.
    const first = waitingReceive(0, topic, "g", 10);
    await expect
      .poll(() => fx.gateways[0]!.gateway.queue.waitingReceives, { timeout: 10_000 })
      .toBe(1);
    const before = await pulls();
    const rest = Array.from({ length: 200 }, () => waitingReceive(0, topic, "g", 10));
    await expect
      .poll(() => fx.gateways[0]!.gateway.queue.waitingReceives, { timeout: 15_000 })
      .toBe(201);
    expect((await pulls()) - before).toBeLessThan(10);
    // What is published is handed out as before: each message once, to the longest waiters.
    for (let i = 0; i < 201; i++) await q(1).publish(topic, `m${i}`);
    const results = await Promise.all([first, ...rest]);
    const bodies = results.flatMap((r) => r.parts.map((p) => p.body.toString())).sort();
    expect(bodies).toEqual(Array.from({ length: 201 }, (_, i) => `m${i}`).sort());
  }, 60_000);
});

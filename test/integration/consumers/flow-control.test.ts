// Flow control per key on a real nats-server, two gateways racing through JetStream: a key's
// second message waits (held on the gateway that pulled it, with no 429 and no delivery counted)
// while other keys' messages and keyless ones go, and it goes once its key's message is
// acknowledged, through either gateway; a key's rate and its publish order (`ordered`) hold
// across both. The key's record is the KV bucket's; the rules in detail on the twins:
// test/unit/queue/flow-control-rules.test.ts, test/unit/queue/flow-rate-order.test.ts.
import { randomBytes } from "node:crypto";
import { PollingQueueClient } from "@vercel/queue";
import { beforeAll, describe, expect, it } from "vitest";
import { PushLedger } from "../../../src/queue/ledgers/push-ledger.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, uniqueName, type Part } from "../../helpers/http.js";
import { attemptUntil } from "../../helpers/wait.js";

const fx = useGateways(2);
const NS = makeNamespace("team_a", "prj_1", "production", null);
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
});

const q = (i: number) => api(fx.gateways[i]!.url, token);

/** Stores a message with the header `tenant: key` (null: none), as a keyed publish stores it. */
async function publish(topic: string, text: string, key: string | null): Promise<number> {
  const out = await fx.gateways[0]!.gateway.jetstream.broker.publish(
    { namespace: NS, topic },
    {
      payload: new TextEncoder().encode(text),
      contentType: "text/plain",
      retentionSeconds: 3600,
      delaySeconds: 0,
      idempotencyKey: null,
      nonce: randomBytes(4).toString("hex"),
      trace: null,
      headers: key === null ? {} : { tenant: key },
    },
  );
  if (out.kind !== "stored") throw new Error(`not stored: ${out.kind}`);
  return out.seq;
}

async function flowSettings(topic: string, body: Record<string, unknown>): Promise<void> {
  const put = await q(0).call("PUT", `${topic}/consumer/workers/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(put.status, await put.clone().text()).toBe(200);
  for (const gw of fx.gateways) {
    await expect
      .poll(() => gw.gateway.settings.effective(NS, topic, "workers")?.flowControl ?? null)
      .not.toBeNull();
  }
}

/** What a receive of up to 10 on gateway `i` hands out (none: []). */
async function receive(topic: string, i: number): Promise<Part[]> {
  const res = await q(i).receive(topic, "workers", { "vqs-max-messages": "10" });
  expect([200, 204]).toContain(res.status);
  if (res.status === 204) return [];
  return parts(res);
}

const texts = (ps: readonly Part[]) => ps.map((p) => p.body.toString()).sort();
const handle = (p: Part) => p.headers.get("vqs-receipt-handle")!;

describe("flow control: concurrency per key, across gateways", () => {
  it("holds a key's second message until its first is acknowledged, others going meanwhile", async () => {
    const topic = uniqueName("flow");
    await flowSettings(topic, { flowControl: { key: "Tenant", concurrency: 1 } });
    expect(fx.gateways[1]!.gateway.settings.effective(NS, topic, "workers")?.flowControl).toEqual({
      key: "tenant",
      concurrency: 1,
      rate: null,
      ordered: false,
    });
    for (const [text, key] of [
      ["a1", "a"],
      ["a2", "a"],
      ["b1", "b"],
      ["n1", null],
      ["n2", null],
    ] as const) {
      await publish(topic, text, key);
    }

    const first = await receive(topic, 0);
    expect(texts(first)).toEqual(["a1", "b1", "n1", "n2"]); // a2 waits on gateway 0
    expect(await receive(topic, 1)).toEqual([]); // nothing for gateway 1: a2 is held, not 429
    await publish(topic, "a3", "a");
    expect(await receive(topic, 1)).toEqual([]); // a3 is held on gateway 1: key a is at 1
    const metrics = await (await fetch(fx.gateways[1]!.metricsUrl)).text();
    expect(metrics).toMatch(/^vqs_flow_held_messages 1$/m);
    expect(metrics).toMatch(/^vqs_flow_waiting_keys 1$/m);

    // a1 acknowledged through the other gateway (which reads a1's key from the log).
    const a1 = first.find((p) => p.body.toString() === "a1")!;
    expect((await q(1).ack(topic, "workers", handle(a1))).status).toBe(204);
    const next = await attemptUntil(
      () => receive(topic, 0),
      (got) => got.length > 0,
      { tries: 20, everyMs: 100 },
    );
    expect(texts(next)).toEqual(["a2"]);
    expect(next[0]!.headers.get("vqs-delivery-count")).toBe("1");
    expect(await receive(topic, 1)).toEqual([]); // a3 still waits: a2 holds key a now

    expect((await q(0).ack(topic, "workers", handle(next[0]!))).status).toBe(204);
    const last = await attemptUntil(
      () => receive(topic, 1),
      (got) => got.length > 0,
      { tries: 20, everyMs: 100 },
    );
    expect(texts(last)).toEqual(["a3"]);
    expect(last[0]!.headers.get("vqs-delivery-count")).toBe("1");
  }, 30_000);

  it("lets a held message wait through its releases without counting a delivery", async () => {
    const topic = uniqueName("flow-wait");
    // maxDeliveries 1: one counted delivery of a2 before its hand-out would dead-letter it.
    await flowSettings(topic, {
      flowControl: { key: "tenant", concurrency: 1 },
      deadLetter: { topic: `${topic}-dead`, maxDeliveries: 1 },
    });
    await publish(topic, "a1", "a");
    const a2Seq = await publish(topic, "a2", "a");
    const a1 = await q(0).receive(topic, "workers", { "vqs-visibility-timeout-seconds": "120" });
    const [held] = await parts(a1);
    expect(held!.body.toString()).toBe("a1");
    // The push ledger over the gateway's records port: where a give-back counts its holdback.
    const { broker, records } = fx.gateways[0]!.gateway.jetstream;
    const pushLedger = new PushLedger(records);
    const group = { namespace: NS, topic, group: "workers" };
    // Receives meanwhile find a2 over its limit: held, given back after its hold, pulled again.
    const holdbacks = await attemptUntil(
      async () => {
        expect(await receive(topic, 0)).toEqual([]);
        return pushLedger.holdbacks(group, a2Seq);
      },
      (n) => n >= 2,
      { tries: 150, everyMs: 200 },
    );
    expect(holdbacks).toBeGreaterThanOrEqual(2);
    expect((await q(0).ack(topic, "workers", handle(held!))).status).toBe(204);
    const a2 = await attemptUntil(
      () => receive(topic, 0),
      (got) => got.length > 0,
      { tries: 30, everyMs: 200 },
    );
    expect(texts(a2)).toEqual(["a2"]);
    expect(a2[0]!.headers.get("vqs-delivery-count")).toBe("1");
    expect(await broker.countMessages({ namespace: NS, topic: `${topic}-dead` })).toBeNull();
  }, 60_000);

  it("frees a sought group's keys: the slot records of its old leases are forgotten", async () => {
    const topic = uniqueName("flow-seek");
    await flowSettings(topic, { flowControl: { key: "tenant", concurrency: 1 } });
    await publish(topic, "a1", "a");
    expect(texts(await receive(topic, 0))).toEqual(["a1"]);
    expect(
      await fx.gateways[0]!.gateway.jetstream.admin.seekGroup(
        { namespace: NS, topic, group: "workers" },
        "latest",
      ),
    ).toBe(true);
    await publish(topic, "a2", "a");
    const got = await attemptUntil(
      () => receive(topic, 1),
      (g) => g.length > 0,
      { tries: 20, everyMs: 100 },
    );
    expect(texts(got)).toEqual(["a2"]);
  }, 30_000);

  it("frees a purged topic's keys", async () => {
    const topic = uniqueName("flow-purge");
    await flowSettings(topic, { flowControl: { key: "tenant", concurrency: 1 } });
    await publish(topic, "a1", "a");
    expect(texts(await receive(topic, 0))).toEqual(["a1"]);
    expect(await fx.gateways[0]!.gateway.jetstream.admin.purgeTopic({ namespace: NS, topic })).toBe(
      1,
    );
    await publish(topic, "a2", "a");
    const got = await attemptUntil(
      () => receive(topic, 1),
      (g) => g.length > 0,
      { tries: 20, everyMs: 100 },
    );
    expect(texts(got)).toEqual(["a2"]);
  }, 30_000);

  it("never has two of a key in flight while consumers on two gateways race, and delivers all", async () => {
    const topic = uniqueName("flow-race");
    await flowSettings(topic, { flowControl: { key: "tenant", concurrency: 1 } });
    const bodies: string[] = [];
    for (let i = 0; i < 6; i++) {
      for (const key of ["a", "b", "c"]) bodies.push(`${key}:${i}`);
      bodies.push(`-:${i}`); // no key
    }
    for (const b of bodies) await publish(topic, b, b.startsWith("-") ? null : b[0]!);
    const inFlight = new Map<string, number>();
    const delivered = new Set<string>();
    let most = 0;
    const untilMs = Date.now() + 25_000;
    const consumer = async (i: number) => {
      while (delivered.size < bodies.length && Date.now() < untilMs) {
        const got = await receive(topic, i % 2);
        const keys = got.map((p) => p.body.toString().split(":")[0]!).filter((k) => k !== "-");
        for (const k of keys) inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
        most = Math.max(most, ...inFlight.values());
        expect(Math.max(0, ...inFlight.values())).toBeLessThanOrEqual(1);
        for (const p of got) delivered.add(p.body.toString());
        for (const p of got) {
          // Worked on for a round trip (its lease extended, which moves its key's slot too),
          // counted out, then acknowledged, which frees the key.
          expect((await q(i % 2).extend(topic, "workers", handle(p), 30)).status).toBe(200);
          const k = p.body.toString().split(":")[0]!;
          if (k !== "-") inFlight.set(k, inFlight.get(k)! - 1);
          expect((await q(i % 2).ack(topic, "workers", handle(p))).status).toBe(204);
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(consumer));
    expect([...delivered].sort()).toEqual([...bodies].sort());
    expect(most).toBe(1);
  }, 40_000);

  it("keys on the header the unchanged @vercel/queue client sends", async () => {
    const topic = uniqueName("flow-client");
    await flowSettings(topic, { flowControl: { key: "Workflow-Run-Id", concurrency: 1 } });
    const client = new PollingQueueClient({
      region: "iad1",
      token,
      deploymentId: null,
      resolveBaseUrl: () => new URL(fx.gateways[0]!.url),
    });
    for (const [n, run] of [
      [1, "run-1"],
      [2, "run-1"],
      [3, "run-2"],
    ] as const) {
      await client.send(topic, { n }, { headers: { "Workflow-Run-Id": run } });
    }
    const got = await receive(topic, 0);
    expect(texts(got)).toEqual(['{"n":1}', '{"n":3}']); // n 2 waits for run-1's first
    const first = got.find((p) => p.body.toString() === '{"n":1}')!;
    expect((await q(0).ack(topic, "workers", handle(first))).status).toBe(204);
    const next = await attemptUntil(
      () => receive(topic, 0),
      (g) => g.length > 0,
      { tries: 20, everyMs: 100 },
    );
    expect(texts(next)).toEqual(['{"n":2}']);
  }, 30_000);
});

describe("flow control: rate and order per key, across gateways", () => {
  it("refuses ordered with a concurrency above 1, and a rate longer than a key is remembered", async () => {
    const topic = uniqueName("flow-bad");
    for (const flowControl of [
      { key: "tenant", ordered: true, concurrency: 2 },
      { key: "tenant", rate: { limit: 1, periodSeconds: 86_400 } },
    ]) {
      const put = await q(0).call("PUT", `${topic}/consumer/workers/settings`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ flowControl }),
      });
      expect(put.status).toBe(400);
      expect(await errorCode(put)).toBe("invalid_settings");
    }
    // Nothing stored: the group has no flow control.
    const got = await q(0).call("GET", `${topic}/consumer/workers/settings`);
    expect(got.status).toBe(404);
    expect(
      fx.gateways[0]!.gateway.settings.effective(NS, topic, "workers")?.flowControl ?? null,
    ).toBeNull();
  });

  it("hands out each key's messages in publish order through failed leases on two gateways", async () => {
    const topic = uniqueName("flow-ordered");
    await flowSettings(topic, { flowControl: { key: "tenant", ordered: true } });
    const bodies: string[] = [];
    for (let i = 0; i < 5; i++) for (const key of ["a", "b"]) bodies.push(`${key}:${i}`);
    for (const b of bodies) await publish(topic, b, b[0]!);
    const acked = new Map<string, number[]>([
      ["a", []],
      ["b", []],
    ]);
    const failedOnce = new Set<string>();
    const inFlight = new Map<string, number>();
    let handOuts = 0;
    const untilMs = Date.now() + 30_000;
    const consumer = async (i: number) => {
      const gw = i % 2;
      while ([...acked.values()].flat().length < bodies.length && Date.now() < untilMs) {
        const got = await receive(topic, gw);
        for (const p of got) {
          const [k, n] = p.body.toString().split(":") as [string, string];
          handOuts++;
          // Only the key's head is handed out: the next in publish order of what was acknowledged.
          expect(Number(n)).toBe(acked.get(k)!.length);
          inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
          expect(inFlight.get(k)).toBe(1);
          // Worked on for a round trip, counted out, then released or acknowledged.
          expect((await q(gw).extend(topic, "workers", handle(p), 30)).status).toBe(200);
          inFlight.set(k, inFlight.get(k)! - 1);
          if (Number(n) % 2 === 0 && !failedOnce.has(p.body.toString())) {
            // Failed once: released, it is the head again, before the later ones pulled meanwhile.
            failedOnce.add(p.body.toString());
            expect((await q(gw).extend(topic, "workers", handle(p), 0)).status).toBe(200);
            continue;
          }
          acked.get(k)!.push(Number(n));
          expect((await q(gw).ack(topic, "workers", handle(p))).status).toBe(204);
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(consumer));
    expect(acked.get("a")).toEqual([0, 1, 2, 3, 4]);
    expect(acked.get("b")).toEqual([0, 1, 2, 3, 4]);
    expect(handOuts).toBe(bodies.length + 6); // the failed ones twice, nothing else again
  }, 45_000);

  it("places a delayed message in its ordered key's order when it is due, as if published then", async () => {
    const topic = uniqueName("flow-delayed");
    await flowSettings(topic, { flowControl: { key: "tenant", ordered: true } });
    const client = new PollingQueueClient({
      region: "iad1",
      token,
      deploymentId: null,
      resolveBaseUrl: () => new URL(fx.gateways[0]!.url),
    });
    const send = (n: string, delaySeconds = 0) =>
      client.send(topic, { n }, { headers: { tenant: "a" }, delaySeconds });
    const next = (tries = 40) =>
      attemptUntil(
        async () => [...(await receive(topic, 0)), ...(await receive(topic, 1))],
        (g) => g.length > 0,
        { tries, everyMs: 100 },
      );
    await send("late", 2);
    await send("a1");
    // Not blocked by the one published before it while that one is delayed.
    const [a1] = await next();
    expect(texts([a1!])).toEqual(['{"n":"a1"}']);
    expect((await q(0).ack(topic, "workers", handle(a1!))).status).toBe(204);
    const [late] = await next(100); // due 2 s after its publish
    expect(texts([late!])).toEqual(['{"n":"late"}']);
    await send("a2");
    expect([...(await receive(topic, 0)), ...(await receive(topic, 1))]).toEqual([]);
    expect((await q(1).ack(topic, "workers", handle(late!))).status).toBe(204);
    expect(texts(await next())).toEqual(['{"n":"a2"}']);
  }, 30_000);

  it("holds a key's rate across two gateways, other keys unlimited by it", async () => {
    const topic = uniqueName("flow-rate");
    await flowSettings(topic, {
      flowControl: { key: "tenant", rate: { limit: 5, periodSeconds: 1, burst: 1 } },
    });
    for (let i = 0; i < 30; i++) await publish(topic, `a:${i}`, "a");
    for (let i = 0; i < 5; i++) await publish(topic, `b:${i}`, "b");
    const times = new Map<string, number[]>([
      ["a", []],
      ["b", []],
    ]);
    const startMs = Date.now();
    const consumer = async (i: number) => {
      while (Date.now() - startMs < 3_000) {
        const got = await receive(topic, i % 2);
        for (const p of got) {
          times.get(p.body.toString()[0]!)!.push(Date.now());
          expect((await q(i % 2).ack(topic, "workers", handle(p))).status).toBe(204);
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(consumer));
    const a = times.get("a")!.sort((x, y) => x - y);
    // 5 per second, evenly (burst 1): at most 1 + 5 per second over the run, and not stalled.
    const spanS = (a.at(-1)! - a[0]!) / 1000;
    expect(a.length).toBeLessThanOrEqual(1 + Math.ceil(spanS * 5));
    expect(a.length).toBeGreaterThanOrEqual(10);
    // Any 6 consecutive hand-outs span a second at the gateways (measured here after each
    // answer: less what one answer may lag on a loaded machine).
    for (let i = 0; i + 5 < a.length; i++) expect(a[i + 5]! - a[i]!).toBeGreaterThan(700);
    // Key b's five went at once, not behind key a's rate.
    expect(times.get("b")).toHaveLength(5);
    expect(times.get("b")!.at(-1)! - startMs).toBeLessThan(2500);
  }, 30_000);
});

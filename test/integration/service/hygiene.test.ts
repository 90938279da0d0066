// Limits and hygiene: per-tenant rate limits (429 + Retry-After), caps on topics and consumer
// groups per namespace (403), idle consumer groups removed by JetStream (inactive_threshold),
// and empty idle topics removed by the gateway's sweeper.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { topicNames } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { startGateway, type TestGateway, type TestGatewayOptions } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  await Promise.all(gateways.map((g) => g.close()));
  await issuer?.close();
  await nats?.dispose();
});

async function gateway(options: TestGatewayOptions) {
  const g = await startGateway(nats.url, issuer, options);
  gateways.push(g);
  return g;
}

const streamOf = (project: string, topic: string) =>
  topicNames("iad1", { namespace: makeNamespace("team_a", project, "production", null), topic })
    .stream;

describe("per-tenant rate limit", () => {
  it("answers 429 with Retry-After on publish and receive past the limit, per tenant, never on ack", async () => {
    const gw = await gateway({
      env: {
        VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "5",
        VQS_TENANT_OVERRIDES: "team_big:rate=1000",
      },
    });
    const topic = uniqueName();
    const q = api(gw.url, await issuer.token({ project_id: "prj_rate" }));
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => q.publish(topic, "x").then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(10); // two windows at most
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const limited = await q.receive(topic, "g");
    if (limited.status !== 429) {
      // The window may just have turned: use up this one, then look.
      await Promise.all(Array.from({ length: 6 }, () => q.receive(topic, "g")));
    }
    const refused = await q.receive(topic, "g");
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // Another tenant has its own budget, and a team can be given a larger one.
    const other = api(gw.url, await issuer.token({ project_id: "prj_other" }));
    expect((await other.publish(topic, "y")).status).toBe(201);
    const big = api(gw.url, await issuer.token({ owner_id: "team_big" }));
    const bigStatuses = await Promise.all(
      Array.from({ length: 20 }, () => big.publish(topic, "z").then((r) => r.status)),
    );
    expect(bigStatuses.every((s) => s === 201)).toBe(true);

    // Acknowledging is never refused, even with the budget spent.
    await new Promise((r) => setTimeout(r, 1100));
    const got = await parts(await q.receive(topic, "acks", { "vqs-max-messages": "5" }));
    expect(got.length).toBeGreaterThan(0);
    await Promise.all(Array.from({ length: 8 }, () => q.publish(topic, "spend")));
    for (const p of got) {
      expect((await q.ack(topic, "acks", p.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    }
  });
});

describe("caps per namespace", () => {
  it("refuses a topic past VQS_MAX_TOPICS_PER_NAMESPACE with 403 topic_limit_reached", async () => {
    const gw = await gateway({ env: { VQS_MAX_TOPICS_PER_NAMESPACE: "3" } });
    const q = api(gw.url, await issuer.token({ project_id: "prj_topics" }));
    const topics = [uniqueName(), uniqueName(), uniqueName()];
    for (const t of topics) expect((await q.publish(t, "x")).status).toBe(201);
    const refused = await q.publish(uniqueName(), "x");
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe("topic_limit_reached");
    // Existing topics go on working; other namespaces have their own count.
    expect((await q.publish(topics[0]!, "again")).status).toBe(201);
    const other = api(gw.url, await issuer.token({ project_id: "prj_topics_2" }));
    expect((await other.publish(uniqueName(), "x")).status).toBe(201);
  });

  it("refuses a consumer group past VQS_MAX_GROUPS_PER_NAMESPACE with 403 group_limit_reached", async () => {
    const gw = await gateway({ env: { VQS_MAX_GROUPS_PER_NAMESPACE: "2" } });
    const q = api(gw.url, await issuer.token({ project_id: "prj_groups" }));
    const [t1, t2] = [uniqueName(), uniqueName()];
    await q.publish(t1, "x");
    await q.publish(t2, "x");
    expect((await q.receive(t1, "a")).status).toBe(200);
    expect((await q.receive(t2, "b")).status).toBe(200); // groups count across topics
    const refused = await q.receive(t1, "c");
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe("group_limit_reached");
    await q.publish(t1, "y");
    expect((await q.receive(t1, "a")).status).toBe(200);
  });
});

describe("idle clean-up", () => {
  it("lets JetStream remove a consumer group idle for the configured time; it comes back on use", async () => {
    const gw = await gateway({ config: { consumerInactiveSeconds: 1 } });
    const q = api(gw.url, await issuer.token({ project_id: "prj_idle" }));
    const topic = uniqueName();
    await q.publish(topic, "one");
    const [first] = await parts(await q.receive(topic, "sleepy"));
    // Acknowledged: nats-server 2.11+ keeps a consumer that still has messages pending.
    expect((await q.ack(topic, "sleepy", first!.headers.get("vqs-receipt-handle")!)).status).toBe(
      204,
    );
    const stream = streamOf("prj_idle", topic);
    await expect
      .poll(async () => (await jsm.consumers.list(stream).next()).length, {
        timeout: 10_000,
        interval: 250,
      })
      .toBe(0);
    await q.publish(topic, "two");
    const got = await parts(await q.receive(topic, "sleepy", { "vqs-max-messages": "10" }));
    // The group starts again from the oldest stored message, so it receives "one" again: that
    // is why the production minimum is the longest TTL plus an hour (by then "one" is gone).
    expect(got.map((p) => p.body.toString()).sort()).toEqual(["one", "two"]);
  });

  it("removes an empty topic not published to for topicIdleSeconds, and recreates it on publish", async () => {
    let offsetMs = 0;
    const gw = await gateway({
      config: { topicIdleSeconds: 60 },
      now: () => Date.now() + offsetMs,
    });
    const q = api(gw.url, await issuer.token({ project_id: "prj_sweep" }));
    const [empty, busy] = [uniqueName(), uniqueName()];
    await q.publish(empty, "old");
    await q.publish(busy, "kept");
    expect((await q.receive(empty, "g")).status).toBe(200);
    const stream = streamOf("prj_sweep", empty);
    await jsm.streams.purge(stream); // stands in for every message reaching the stream's max age

    await gw.gateway.jetstream.sweeper.sweep();
    expect((await jsm.streams.info(stream)).config.name).toBe(stream); // not idle long enough yet

    offsetMs = 61_000;
    expect(await gw.gateway.jetstream.sweeper.sweep()).toBeGreaterThanOrEqual(1);
    await expect(jsm.streams.info(stream)).rejects.toThrow(/stream not found/);
    expect((await jsm.streams.info(streamOf("prj_sweep", busy))).state.messages).toBe(1);

    // The topic is simply new again, through any gateway's cached view of it.
    expect((await q.receive(empty, "g")).status).toBe(204);
    expect((await q.publish(empty, "new")).status).toBe(201);
    const got = await parts(await q.receive(empty, "g"));
    expect(got.map((p) => p.body.toString())).toEqual(["new"]);
  });
});

describe("Vqs-Max-Concurrency across gateways", () => {
  it("holds exactly on one gateway, and overshoots racing receives by at most (gateways - 1) x limit", async () => {
    const [g1, g2] = [await gateway({}), await gateway({})];
    const token = await issuer.token({ project_id: "prj_conc" });
    const [q1, q2] = [api(g1.url, token), api(g2.url, token)];
    const topic = uniqueName();
    for (let i = 0; i < 10; i++) {
      const bodies = Array.from({ length: 10 }, (_, j) => `m${i * 10 + j}`);
      expect((await q1.publishBatch(topic, bodies)).status).toBe(200);
    }
    const limit = { "vqs-max-concurrency": "4", "vqs-max-messages": "10" };

    // In turn, alternating gateways: the fifth message is never handed out.
    const first = await parts(await q1.receive(topic, "turns", limit));
    expect(first).toHaveLength(4);
    for (const q of [q2, q1, q2]) {
      const res = await q.receive(topic, "turns", limit);
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
    }
    await q2.ack(topic, "turns", first[0]!.headers.get("vqs-receipt-handle")!);
    expect(await parts(await q2.receive(topic, "turns", limit))).toHaveLength(1);

    // Racing: receives of a group take turns within a gateway, but a receive on each gateway
    // can read the in-flight count before the other's pull. A store too busy to answer a pull in
    // time (three files at once on nats-server 2.9) answers 503, leasing nothing: the racer tries
    // again after its Retry-After, as a client does.
    const racers = 8;
    const receiveRetrying = async (q: typeof q1) => {
      for (let tries = 1; ; tries++) {
        const res = await q.receive(topic, "race", limit);
        if (res.status !== 503 || tries === 5) return res;
        await res.arrayBuffer();
        await sleep(1000 * Number(res.headers.get("retry-after") ?? "1"));
      }
    };
    const answers = await Promise.all(
      Array.from({ length: racers }, (_, i) => receiveRetrying(i % 2 ? q2 : q1)),
    );
    let leased = 0;
    for (const res of answers) {
      expect([200, 204, 429]).toContain(res.status);
      if (res.status === 200) leased += (await parts(res)).length;
    }
    expect(leased).toBeGreaterThanOrEqual(4);
    expect(leased).toBeLessThanOrEqual(4 + (2 - 1) * 4);
    // Once the racers are answered, the limit holds again.
    expect((await q1.receive(topic, "race", limit)).status).toBe(429);
  });

  it("hands a message whose lease ran out out again at the limit, never a new one past it", async () => {
    const [g1, g2] = [await gateway({}), await gateway({})];
    const token = await issuer.token({ project_id: "prj_conc_expired" });
    const [q1, q2] = [api(g1.url, token), api(g2.url, token)];
    const topic = uniqueName();
    expect((await q1.publish(topic, "first")).status).toBe(201);
    expect((await q1.publish(topic, "second")).status).toBe(201);
    const limit = { "vqs-max-concurrency": "1" };

    const [got] = await parts(await q1.receive(topic, "g", limit));
    expect(got!.body.toString()).toBe("first");
    const handle = got!.headers.get("vqs-receipt-handle")!;
    expect((await q1.extend(topic, "g", handle, 2)).status).toBeLessThan(300);
    // At the limit: "second" is pulled, released unseen, and recorded for every gateway, so a
    // gateway that pulls it back as a redelivery does not take it for an expired lease.
    expect((await q1.receive(topic, "g", limit)).status).toBe(429);
    expect((await q2.receive(topic, "g", limit)).status).toBe(429);
    expect((await q1.receive(topic, "g", limit)).status).toBe(429);

    await new Promise((r) => setTimeout(r, 4000));
    // JetStream still counts "first" as pending; it is handed out again (a receive may first
    // pull "second" back and release it again, hence a few tries).
    let again: Awaited<ReturnType<typeof parts>> = [];
    for (let i = 0; i < 4 && again.length === 0; i++) {
      const res = await (i % 2 ? q2 : q1).receive(topic, "g", limit);
      expect([200, 429]).toContain(res.status);
      if (res.status === 200) again = await parts(res);
    }
    expect(again.map((p) => p.body.toString())).toEqual(["first"]);
    expect(again[0]!.headers.get("vqs-delivery-count")).toBe("2");
    // Truly in flight again: the limit holds on both gateways.
    expect((await q2.receive(topic, "g", limit)).status).toBe(429);
    expect((await q1.receive(topic, "g", limit)).status).toBe(429);
    expect((await q1.ack(topic, "g", again[0]!.headers.get("vqs-receipt-handle")!)).status).toBe(
      204,
    );
    const [next] = await parts(await q2.receive(topic, "g", limit));
    expect(next!.body.toString()).toBe("second");
  });

  it("receives by ID at the limit when what JetStream still counts is a lease that ran out", async () => {
    const gw = await gateway({});
    const q = api(gw.url, await issuer.token({ project_id: "prj_conc_byid" }));
    const topic = uniqueName();
    const ids: string[] = [];
    for (const body of ["first", "second"]) {
      const res = await q.publish(topic, body);
      ids.push(((await res.json()) as { messageId: string }).messageId);
    }
    const limit = { "vqs-max-concurrency": "1" };
    // The limit holds for receive by ID: group "live" has "first" in flight.
    expect((await parts(await q.receive(topic, "live", limit))).length).toBe(1);
    const refused = await q.receiveById(topic, "live", ids[1]!, limit);
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("concurrency_limit_exceeded");

    // Group "g": "first" by the cursor, its lease cut to 2 s and run out. JetStream still
    // counts it as pending, but nothing is in flight: "second" by ID is taken.
    const [got] = await parts(await q.receive(topic, "g", limit));
    expect(got!.body.toString()).toBe("first");
    expect((await q.extend(topic, "g", got!.headers.get("vqs-receipt-handle")!, 2)).status).toBe(
      200,
    );
    await new Promise((r) => setTimeout(r, 3000));
    const [second] = await parts(await q.receiveById(topic, "g", ids[1]!, limit));
    expect(second!.body.toString()).toBe("second");
    expect((await q.ack(topic, "g", second!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    // "first" itself by ID, its cursor lease over: taking it adds nothing in flight.
    const [first] = await parts(await q.receiveById(topic, "g", ids[0]!, limit));
    expect(first!.body.toString()).toBe("first");
    expect(first!.headers.get("vqs-delivery-count")).toBe("2");
  });
});

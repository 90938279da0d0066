// Short-lived topics under a pushed pattern (Workflow DevKit 5.x makes one per run): removed once
// settled (every group acknowledged every message, nothing delayed, nothing leased) and unused
// for settledTopicSeconds, and not before, so a namespace at its topic cap refuses a new
// topic until its topics settle; a publish racing a removal is stored and delivered; and a
// removed topic's large bodies go with it, but not the body of an upload to it under way.
// Thousands of real Workflow runs through a capped namespace: world-5-sequential-replays.test.ts.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { QueueClient } from "@vercel/queue";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY_STREAM, bodyTopicPrefix } from "../../../src/nats/core/naming.js";
import { closeAndDelete } from "../../../src/nats/queue-state/topics/topic-closing.js";
import { namespaceLabel } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, sleep } from "../../helpers/http.js";
import { TEAM_A_NAMESPACE } from "../../helpers/issuer.js";
import { metricLines } from "../../helpers/metrics.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";
import { eventually } from "../../helpers/settings.js";
import { clockPast } from "../../helpers/wait.js";

const CAP = 300;
const SETTLED_SECONDS = 1;
const fx = useGateways(1, {
  env: { VQS_MAX_TOPICS_PER_NAMESPACE: String(CAP) },
  config: { settledTopicSeconds: SETTLED_SECONDS },
});
let app: PushApp;
let token: string;
let nc: NatsConnection;
let jsm: JetStreamManager;
/** Message bodies handled by the app, with how often. */
const handled = new Map<string, number>();
/** Handlers of `slow_*` topics wait for this. */
let releaseSlow: () => void = () => undefined;
let slow = new Promise<void>((r) => (releaseSlow = r));
/** Handlers of `hold_*` topics wait for this. */
let releaseHeld: () => void = () => undefined;
const held = new Promise<void>((r) => (releaseHeld = r));

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
  nc = await connect({ servers: fx.nats.url });
  jsm = await jetstreamManager(nc);
  const route = app.fetchRoute("runs", {
    handler: async (payload) => {
      const { id } = payload as { id: string };
      if (id.startsWith("slow")) await slow;
      if (id.startsWith("hold")) await held;
      handled.set(id, (handled.get(id) ?? 0) + 1);
    },
  });
  for (const pattern of ["run_*", "slow_*", "later_*", "hold_*"])
    await settings(pattern, { push: { url: route } });
  await settings("plain", { push: { url: route } }); // one concrete topic: kept
});

afterAll(async () => {
  releaseSlow();
  releaseHeld();
  await nc?.close();
  await app?.close();
});

async function settings(topic: string, body: unknown): Promise<void> {
  const res = await api(fx.gateways[0]!.url, token).call(
    "PUT",
    `${encodeURIComponent(topic)}/consumer/default/settings`,
    { headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
  expect(res.status, await res.clone().text()).toBe(200);
}

const client = () =>
  new QueueClient({
    region: "iad1",
    token,
    deploymentId: null,
    resolveBaseUrl: () => new URL(fx.gateways[0]!.url),
  });

/** The topic streams of the region, by topic name. */
async function topics(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const info of jsm.streams.list()) {
    if (!/^VQS_[0-9a-f]{32}$/.test(info.config.name)) continue;
    const d = JSON.parse(info.config.description ?? "{}") as { topic?: string };
    if (d.topic) out.set(d.topic, info.config.name);
  }
  return out;
}

/**
 * Waits until every topic `which` names has been unused for the settled time: until the clock
 * (the sweeper's) is past the last message the server stored in any of them by that much.
 */
async function pastSettledTime(which: (topic: string) => boolean): Promise<void> {
  let last = 0;
  for await (const info of jsm.streams.list()) {
    if (!/^VQS_[0-9a-f]{32}$/.test(info.config.name)) continue;
    const d = JSON.parse(info.config.description ?? "{}") as { topic?: string };
    if (!d.topic || !which(d.topic)) continue;
    last = Math.max(last, Date.parse(info.state.last_ts));
  }
  expect(last).toBeGreaterThan(0);
  await clockPast(last + SETTLED_SECONDS * 1000);
}

async function topicCount(): Promise<number> {
  let n = 0;
  for await (const name of jsm.streams.names()) if (/^VQS_[0-9a-f]{32}$/.test(name)) n++;
  return n;
}

async function allHandled(ids: string[], ms = 30_000): Promise<void> {
  const ok = await eventually(() => ids.every((id) => handled.has(id)), ms);
  expect(ok, `${ids.filter((id) => !handled.has(id)).length} of ${ids.length} not handled`).toBe(
    true,
  );
}

const MB = 1_000_000;
const NS = TEAM_A_NAMESPACE;

/** The topic's bodies in the body store: chunk messages (and commit marker) per body subject. */
async function bodySubjects(topic: string): Promise<Record<string, number>> {
  const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
  try {
    return (await jsm.streams.info(BODY_STREAM, { subjects_filter: filter })).state.subjects ?? {};
  } catch {
    return {};
  }
}

/** Runs `fn` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items.values();
  await Promise.all(
    Array.from({ length: n }, async () => {
      for (let next = it.next(); !next.done; next = it.next()) await fn(next.value);
    }),
  );
}

describe("short-lived topics under a pushed pattern", () => {
  it(`fills a namespace to its cap of ${CAP}, refuses one more until its topics settle`, async () => {
    // CAP topics whose pushes are held in flight: none can settle, so none is removed.
    const q = client();
    const ids = Array.from({ length: CAP }, (_, i) => `hold_${i}`);
    await pool(ids, 25, async (id) => {
      await q.send(id, { id }); // throws on any refusal: up to the cap, none
    });
    expect(await topicCount()).toBe(CAP);
    await eventually(() => app.inFlight("runs").now > 0, 10_000);
    await pastSettledTime((t) => t.startsWith("hold_")); // kept: not settled
    await fx.gateways[0]!.gateway.jetstream.sweeper.sweep();
    expect(await topicCount()).toBe(CAP);
    const gw = api(fx.gateways[0]!.url, token);
    const refused = await gw.publish("hold_more", JSON.stringify({ id: "hold_more" }), {
      "content-type": "application/json",
    });
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe("topic_limit_reached");

    // The handlers end and acknowledge: the topics settle, are removed, and the cap admits again.
    releaseHeld();
    await allHandled(ids);
    let status = 0;
    const admitted = async () => {
      const res = await gw.publish("hold_more", JSON.stringify({ id: "hold_more" }), {
        "content-type": "application/json",
      });
      status = res.status;
      if (status !== 201) expect(await errorCode(res)).toBe("topic_limit_reached");
      return status === 201;
    };
    await eventually(admitted, 30_000, 250);
    expect(status).toBe(201);
    await allHandled(["hold_more"]);
    const gone = await eventually(async () => (await topicCount()) === 0, 30_000);
    expect(gone, `${await topicCount()} topics left`).toBe(true);
  }, 120_000);

  it("keeps topics with a delayed message, a push in flight, or no pushed pattern", async () => {
    const q = client();
    await q.send("later_1", { id: "later_1" }, { delaySeconds: 30 });
    await q.send("slow_1", { id: "slow_1" });
    await q.send("plain", { id: "plain_1" });
    await api(fx.gateways[0]!.url, token).publish("unpushed_1", "x");
    await eventually(() => app.inFlight("runs").now > 0, 10_000);
    // A topic used after the others settles: once a sweep has removed it, that sweep found the
    // others unused for the settled time too.
    await q.send("run_kept_probe", { id: "run_kept_probe" });
    await allHandled(["run_kept_probe"]);
    const sweeper = fx.gateways[0]!.gateway.jetstream.sweeper;
    const probeGone = await eventually(async () => {
      await sweeper.sweep();
      return !(await topics()).has("run_kept_probe");
    }, 15_000);
    expect(probeGone).toBe(true);
    const kept = await topics();
    for (const t of ["later_1", "slow_1", "plain", "unpushed_1"]) expect(kept.has(t), t).toBe(true);
    // The push ends and is acknowledged: that topic goes, the others stay.
    releaseSlow();
    await allHandled(["slow_1"]);
    const gone = await eventually(async () => !(await topics()).has("slow_1"), 15_000);
    expect(gone).toBe(true);
    const now = await topics();
    for (const t of ["later_1", "plain", "unpushed_1"]) expect(now.has(t), t).toBe(true);
    slow = new Promise<void>((r) => (releaseSlow = r));
  });

  it("stores and delivers a publish that meets a removal: deleted, called off, or left behind", async () => {
    // Removals by hand here: the gateway's own sweeps would take these topics first.
    await fx.gateways[0]!.gateway.jetstream.sweeper.stop();
    const q = client();
    const gw = api(fx.gateways[0]!.url, token);
    for (const [topic, removed] of [
      ["run_race_deleted", true],
      ["run_race_kept", false],
    ] as const) {
      await q.send(topic, { id: `${topic}_0` });
      await allHandled([`${topic}_0`]);
      const stream = (await topics()).get(topic)!;
      const seen = await jsm.streams.info(stream);
      let publishing: Promise<Response> | null = null;
      const deleted = await closeAndDelete(jsm, seen, Date.now, async () => {
        // Closed: this publish finds no stream and waits for the removal to end.
        publishing = gw.publish(topic, JSON.stringify({ id: `${topic}_1` }), {
          "content-type": "application/json",
        });
        await sleep(300);
        return removed;
      });
      expect(deleted).toBe(removed);
      expect((await publishing!).status).toBe(201);
      await allHandled([`${topic}_1`]);
    }

    // A remover that died with the topic closed: the next publish opens it again.
    await q.send("run_race_stale", { id: "run_race_stale_0" });
    await allHandled(["run_race_stale_0"]);
    const stream = (await topics()).get("run_race_stale")!;
    const info = await jsm.streams.info(stream);
    const [, ns, id] = /^vqs\.(\w+)\.(\w+)\.>$/.exec(info.config.subjects[0]!)!;
    await jsm.streams.update(stream, {
      ...info.config,
      subjects: [`vqs._closing.${ns}.${id}.${Date.now() - 60_000}`],
    });
    const res = await gw.publish("run_race_stale", JSON.stringify({ id: "run_race_stale_1" }), {
      "content-type": "application/json",
    });
    expect(res.status).toBe(201);
    await allHandled(["run_race_stale_1"]);
  });

  it("never deletes a stream made again under the name, nor one reopened while it was being removed", async () => {
    const q = client();
    const gw = api(fx.gateways[0]!.url, token);
    // Made again: another remover deleted the stream this one saw, and a publish made the topic
    // again with as many messages (the same last sequence).
    await q.send("run_remade", { id: "run_remade_0" });
    await allHandled(["run_remade_0"]);
    const stream = (await topics()).get("run_remade")!;
    const seen = await jsm.streams.info(stream);
    await jsm.streams.delete(stream);
    await q.send("run_remade", { id: "run_remade_1" });
    expect((await jsm.streams.info(stream)).state.last_seq).toBe(seen.state.last_seq);
    expect(await closeAndDelete(jsm, seen, Date.now)).toBe(false);
    await allHandled(["run_remade_1"]);

    // Reopened meanwhile: the close was found stale and undone (here, in beforeDelete) and a
    // publish got in; the remover looks again before it deletes.
    await q.send("run_reopened", { id: "run_reopened_0" });
    await allHandled(["run_reopened_0"]);
    const reopenedStream = (await topics()).get("run_reopened")!;
    const before = await jsm.streams.info(reopenedStream);
    const deleted = await closeAndDelete(
      jsm,
      before,
      Date.now,
      () => Promise.resolve(true),
      async () => {
        const closed = await jsm.streams.info(reopenedStream);
        await jsm.streams.update(reopenedStream, { ...closed.config, ...before.config });
        const res = await gw.publish("run_reopened", JSON.stringify({ id: "run_reopened_1" }), {
          "content-type": "application/json",
        });
        expect(res.status).toBe(201);
      },
    );
    expect(deleted).toBe(false);
    await allHandled(["run_reopened_1"]);
  });

  it("loses no publish racing the sweeper over 200 settled topics", async () => {
    const q = client();
    const first = Array.from({ length: 200 }, (_, i) => `run_busy_${i}`);
    await pool(first, 25, (t) => q.send(t, { id: `${t}_0` }).then(() => undefined));
    await allHandled(first.map((t) => `${t}_0`));
    await pastSettledTime((t) => t.startsWith("run_busy_"));
    const sweeper = fx.gateways[0]!.gateway.jetstream.sweeper;
    const statuses: number[] = [];
    const gw = api(fx.gateways[0]!.url, token);
    await Promise.all([
      sweeper.sweep(),
      sweeper.sweep(),
      pool(first, 10, async (t) => {
        await sleep(Math.random() * 20);
        const res = await gw.publish(t, JSON.stringify({ id: `${t}_1` }), {
          "content-type": "application/json",
        });
        statuses.push(res.status);
      }),
    ]);
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    await allHandled(first.map((t) => `${t}_1`));
  }, 90_000); // 400 runs over 200 topics: some 12 s, more than twice that on a loaded machine

  it("delivers the first message of a topic made again after a sweep, when its group read by ID", async () => {
    // A large message is pushed without its body and read by ID: the group's records then hold
    // an acknowledgement by ID of sequence 1, where the topic made again starts once more.
    const { sweeper } = fx.gateways[0]!.gateway.jetstream;
    await sweeper.stop(); // sweeps by hand
    const q = client();
    await q.send("run_again", { id: "run_again_0", pad: "x".repeat(2 * MB) });
    await allHandled(["run_again_0"]);
    const swept = await eventually(async () => {
      await sweeper.sweep();
      return !(await topics()).has("run_again");
    }, 15_000);
    expect(swept).toBe(true);
    await q.send("run_again", { id: "run_again_1" });
    await allHandled(["run_again_1"]);
  });

  it("removes a swept topic's large bodies with it, but not one still uploading to it", async () => {
    const gw = fx.gateways[0]!;
    const { sweeper, bodies } = gw.gateway.jetstream;
    await sweeper.stop(); // sweeps by hand
    const q = client();
    // Two topics, each with a large message pushed (by ID), handled and acknowledged.
    for (const t of ["run_big_1", "run_big_2"]) {
      await q.send(t, { id: `${t}_0`, pad: "x".repeat(3 * MB) });
    }
    await allHandled(["run_big_1_0", "run_big_2_0"]);
    const [committed] = Object.keys(await bodySubjects("run_big_2"));
    expect(committed).toBeDefined();
    expect(Object.keys(await bodySubjects("run_big_1"))).toHaveLength(1);
    const label = namespaceLabel(NS);
    expect((await bodies.sweep()).usage.get(label)).toBeGreaterThanOrEqual(6 * MB);

    // A second publish to run_big_2 has sent 8 of its 20 MB: its chunks are stored, its message
    // is still to come, and the topic looks settled meanwhile.
    const body = Buffer.from(JSON.stringify({ id: "run_big_2_1", pad: "y".repeat(20 * MB) }));
    const req = request(new URL(`${gw.url}/api/v3/topic/run_big_2`), {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": String(body.length),
      },
    });
    const answered = new Promise<number>((resolve, reject) => {
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
    });
    req.write(body.subarray(0, 8 * MB));
    const uploading = async () =>
      Object.keys(await bodySubjects("run_big_2")).find((s) => s !== committed);
    expect(await eventually(async () => (await uploading()) !== undefined, 20_000)).toBe(true);
    const inFlight = (await uploading())!;
    const chunksBefore = (await bodySubjects("run_big_2"))[inFlight]!;

    // Past the settled time, sweeps remove both topics.
    let removed = 0;
    let left = new Map<string, string>();
    const bothGone = await eventually(async () => {
      removed += await sweeper.sweep();
      left = await topics();
      return !left.has("run_big_1") && !left.has("run_big_2");
    }, 15_000);
    expect(bothGone).toBe(true);
    expect(removed).toBeGreaterThanOrEqual(2);
    // The committed bodies went with their topics; the upload's chunks are all there.
    expect(await bodySubjects("run_big_1")).toEqual({});
    const after = await bodySubjects("run_big_2");
    expect(Object.keys(after)).toEqual([inFlight]);
    expect(after[inFlight]).toBeGreaterThanOrEqual(chunksBefore);

    // The upload ends: its publish makes the topic again, and the whole body is delivered.
    req.end(body.subarray(8 * MB));
    expect(await answered).toBe(201);
    await allHandled(["run_big_2_1"]);

    // Settled again, swept again: nothing of either topic is left, and the namespace stores none.
    const swept = await eventually(async () => {
      await sweeper.sweep();
      return !(await topics()).has("run_big_2");
    }, 15_000);
    expect(swept).toBe(true);
    expect(await bodySubjects("run_big_2")).toEqual({});
    expect((await bodies.sweep()).usage.get(label) ?? 0).toBe(0);
    const stored = await metricLines(gw.metricsUrl, "vqs_large_body_stored_bytes");
    expect(stored.join("\n")).not.toContain(`queue_namespace="${label}"`);
  }, 120_000);
});

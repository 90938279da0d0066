// Short-lived topics under a pushed pattern (Workflow DevKit 5.x makes one per run): removed once
// settled (every group acknowledged every message, nothing delayed, nothing leased) and unused
// for VQS_SETTLED_TOPIC_SECONDS, so thousands of runs pass through a namespace whose topic cap is
// far lower; a publish racing a removal is stored and delivered, also on a topic made again
// whose group read by ID.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { QueueClient } from "@vercel/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeAndDelete } from "../../../src/nats/queue-state/topic-closing.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, sleep } from "../../helpers/http.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";
import { eventually } from "../../helpers/settings.js";

const CAP = 300;
const fx = useGateways(1, {
  env: { VQS_SETTLED_TOPIC_SECONDS: "1", VQS_MAX_TOPICS_PER_NAMESPACE: String(CAP) },
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

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
  nc = await connect({ servers: fx.nats.url });
  jsm = await jetstreamManager(nc);
  const route = app.fetchRoute("runs", {
    handler: async (payload) => {
      const { id } = payload as { id: string };
      if (id.startsWith("slow")) await slow;
      handled.set(id, (handled.get(id) ?? 0) + 1);
    },
  });
  for (const pattern of ["run_*", "slow_*", "later_*"])
    await settings(pattern, { push: { url: route } });
  await settings("plain", { push: { url: route } }); // one concrete topic: kept
});

afterAll(async () => {
  releaseSlow();
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
  it(`carries 2,000 runs, a topic each, through a namespace capped at ${CAP} topics`, async () => {
    const q = client();
    const started = Date.now();
    const wave = 200;
    for (let w = 0; w < 10; w++) {
      // Room for a wave: the previous waves' settled topics are removed on their own.
      const room = await eventually(async () => (await topicCount()) <= CAP - wave, 30_000);
      expect(room, `topics left after wave ${w}: ${await topicCount()}`).toBe(true);
      const ids = Array.from({ length: wave }, (_, i) => `run_${w}_${i}`);
      await pool(ids, 25, async (id) => {
        await q.send(id, { id }); // throws on any refusal (403 topic_limit_reached among them)
      });
      await allHandled(ids);
    }
    expect([...handled.keys()].filter((id) => id.startsWith("run_"))).toHaveLength(2000);
    console.log(`2,000 short-lived topics in ${Date.now() - started} ms`);
  }, 120_000);

  it("keeps topics with a delayed message, a push in flight, or no pushed pattern", async () => {
    const q = client();
    await q.send("later_1", { id: "later_1" }, { delaySeconds: 30 });
    await q.send("slow_1", { id: "slow_1" });
    await q.send("plain", { id: "plain_1" });
    await api(fx.gateways[0]!.url, token).publish("unpushed_1", "x");
    await eventually(() => app.inFlight("runs").now > 0, 10_000);
    const sweeper = fx.gateways[0]!.gateway.jetstream.sweeper;
    await sleep(1500); // past the settled time
    await sweeper.sweep();
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

  it("loses no publish racing the sweeper over 200 settled topics", async () => {
    const q = client();
    const first = Array.from({ length: 200 }, (_, i) => `run_busy_${i}`);
    await pool(first, 25, (t) => q.send(t, { id: `${t}_0` }).then(() => undefined));
    await allHandled(first.map((t) => `${t}_0`));
    await sleep(1200);
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
  });

  it("delivers the first message of a topic made again after a sweep, when its group read by ID", async () => {
    // A large message is pushed without its body and read by ID: the group's records then hold
    // an acknowledgement by ID of sequence 1, where the topic made again starts once more.
    const { sweeper } = fx.gateways[0]!.gateway.jetstream;
    await sweeper.stop(); // sweeps by hand
    const q = client();
    await q.send("run_again", { id: "run_again_0", pad: "x".repeat(2 * MB) });
    await allHandled(["run_again_0"]);
    await sleep(1500); // past the settled time
    const swept = await eventually(async () => {
      await sweeper.sweep();
      return !(await topics()).has("run_again");
    }, 15_000);
    expect(swept).toBe(true);
    await q.send("run_again", { id: "run_again_1" });
    await allHandled(["run_again_1"]);
  });
});

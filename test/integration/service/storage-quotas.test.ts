// Storage quotas on a real nats-server with a small store: a namespace that fills its topic or
// namespace quota gets 429 topic_full / storage_quota_exceeded with Retry-After, while another
// namespace publishes and receives normally, the store never fills, nothing stored is lost, a
// raised quota takes effect, a restarted gateway keeps the quotas, and JetStream's own hard
// per-topic limit (topicHardMaxBytes) answers the same 429 topic_full.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerProcess } from "../../../src/dev/nats-server-process.js";
import { namespaceFilter } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import type { Config } from "../../../src/config.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { scrape } from "../../helpers/metrics.js";

const STORE_BYTES = 16 * 1024 * 1024;
const QUOTA = 400_000;
const TOPIC_QUOTA = 250_000;
const BODY = "x".repeat(10_000);

let dir: string;
let nats: NatsServerProcess;
let issuer: TestIssuer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "vqs-quota-"));
  nats = await startNatsServer({ storeDir: join(dir, "store"), maxFileStore: STORE_BYTES });
  issuer = await startIssuer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  await Promise.all(gateways.map((g) => g.close()));
  await issuer?.close();
  await nats?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function gateway(
  env: Record<string, string>,
  config?: Partial<Config>,
): Promise<TestGateway> {
  const g = await startGateway(nats.url, issuer, { env, ...(config ? { config } : {}) });
  gateways.push(g);
  return g;
}

const QUOTA_ENV = {
  VQS_NAMESPACE_MAX_BYTES: String(QUOTA),
  VQS_TOPIC_MAX_BYTES: String(TOPIC_QUOTA),
};

async function namespaceBytes(project: string): Promise<number> {
  const filter = namespaceFilter("iad1", makeNamespace("team_q", project, "production", null));
  let bytes = 0;
  for await (const s of jsm.streams.list(filter)) bytes += s.state.bytes;
  return bytes;
}

/** Publishes until the first refusal; returns how many were stored and the refusal. */
async function fill(q: ReturnType<typeof api>, topic: string, max = 200) {
  for (let i = 0; i < max; i++) {
    const res = await q.publish(topic, BODY);
    if (res.status !== 201) return { stored: i, refused: res };
  }
  throw new Error(`${max} publishes to ${topic} were all taken`);
}

describe("storage quotas", () => {
  it("refuses a full topic and a full namespace with 429 while another namespace goes on", async () => {
    const gw = await gateway(QUOTA_ENV);
    const a = api(gw.url, await issuer.token({ owner_id: "team_q", project_id: "prj_a" }));
    const b = api(gw.url, await issuer.token({ owner_id: "team_q", project_id: "prj_b" }));
    const [t1, t2] = [uniqueName(), uniqueName()];

    // The topic limit first: its stream holds no more than the limit allows.
    const first = await fill(a, t1);
    expect(first.refused.status).toBe(429);
    expect(await errorCode(first.refused)).toBe("topic_full");
    expect(Number(first.refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(first.stored).toBeGreaterThan(15);

    // Then the namespace's: a second topic takes what is left of it.
    const second = await fill(a, t2);
    expect(second.refused.status).toBe(429);
    expect(await errorCode(second.refused)).toBe("storage_quota_exceeded");
    expect(Number(second.refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await errorCode(await a.publish(uniqueName(), BODY))).toBe("storage_quota_exceeded");
    // One gateway: its own count is exact, so the namespace stops within one message of it.
    expect(await namespaceBytes("prj_a")).toBeLessThanOrEqual(QUOTA + 2 * BODY.length);

    // The other namespace publishes and receives as usual, every time.
    const topicB = uniqueName();
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => b.publish(topicB, `b-${i}`).then((r) => r.status)),
    );
    expect(statuses.every((s) => s === 201)).toBe(true);
    const got = await parts(await b.receive(topicB, "g", { "vqs-max-messages": "10" }));
    expect(got.length).toBe(10);

    // Nothing A stored was dropped: every message is still there to receive.
    const firstBatch = await parts(await a.receive(t1, "g", { "vqs-max-messages": "10" }));
    expect(firstBatch.length).toBe(10);
    const info = jsm.streams.list(
      namespaceFilter("iad1", makeNamespace("team_q", "prj_a", "production", null)),
    );
    let messages = 0;
    for await (const s of info) messages += s.state.messages;
    expect(messages).toBe(first.stored + second.stored);

    // Quota use per namespace is exported, and each refusal is counted by its code.
    const metrics = await scrape(gw.metricsUrl);
    const series = (name: string) =>
      Number(
        metrics
          .split("\n")
          .find((l) => l.startsWith(`${name}{queue_namespace="team_q/prj_a/production"}`))
          ?.split(" ")
          .pop(),
      );
    expect(series("vqs_namespace_storage_limit_bytes")).toBe(QUOTA);
    expect(series("vqs_namespace_storage_bytes")).toBeGreaterThan(QUOTA * 0.9);
    expect(metrics).toMatch(
      /vqs_tenant_limit_refusals_total\{code="storage_quota_exceeded"\} [1-9]/,
    );

    // The store itself never filled: far below JetStream's limit.
    const account = await jsm.getAccountInfo();
    expect(account.storage).toBeLessThan(STORE_BYTES / 2);
  });

  it("keeps the quotas across a gateway restart and applies a raised one", async () => {
    const before = await gateway(QUOTA_ENV);
    const token = await issuer.token({ owner_id: "team_q", project_id: "prj_restart" });
    const topic = uniqueName();
    const filled = await fill(api(before.url, token), topic);
    expect(await errorCode(filled.refused)).toBe("topic_full");
    gateways.splice(gateways.indexOf(before), 1);
    await before.close();

    // A new gateway reads the namespace's usage before its first publish: still full.
    const restarted = await gateway(QUOTA_ENV);
    const again = await api(restarted.url, token).publish(topic, BODY);
    expect(again.status).toBe(429);
    expect(await errorCode(again)).toBe("topic_full");

    // A raised topic limit (rolled out to the gateways) lets the topic take more.
    const raised = await gateway({ ...QUOTA_ENV, VQS_TOPIC_MAX_BYTES: String(2 * TOPIC_QUOTA) });
    expect((await api(raised.url, token).publish(topic, BODY)).status).toBe(201);
    // A per-team override raises the namespace limit of that team only.
    const teamRaised = await gateway({
      ...QUOTA_ENV,
      VQS_TOPIC_MAX_BYTES: "0",
      VQS_NAMESPACE_MAX_BYTES: "1000",
      VQS_TENANT_OVERRIDES: `team_q:bytes=${10 * QUOTA}`,
    });
    expect((await api(teamRaised.url, token).publish(topic, BODY)).status).toBe(201);
    const otherTeam = api(teamRaised.url, await issuer.token({ owner_id: "team_small" }));
    const refused = await otherTeam.publish(uniqueName(), BODY);
    expect(await errorCode(refused)).toBe("storage_quota_exceeded");
  });

  it("answers JetStream's own hard topic limit with 429 topic_full, keeping what is stored", async () => {
    const gw = await gateway(
      {
        VQS_TOPIC_MAX_BYTES: "0",
        VQS_NAMESPACE_MAX_BYTES: "0",
      },
      { topicHardMaxBytes: 100_000 },
    );
    const q = api(gw.url, await issuer.token({ owner_id: "team_q", project_id: "prj_hard" }));
    const topic = uniqueName();
    const filled = await fill(q, topic);
    expect(filled.refused.status).toBe(429);
    expect(await errorCode(filled.refused)).toBe("topic_full");
    expect(filled.refused.headers.get("retry-after")).not.toBeNull();
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got[0]?.body.toString()).toBe(BODY); // the first message is still there
  });
});

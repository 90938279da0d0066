// A hostile tenant, on a real nats-server: every attack of issue 32's findings 1-9 tried briefly
// by an ordinary token (each attack its own project, so one attack's caps do not hide another's),
// each answered by a clear 4xx with its stable code or harmless, and nothing stored lost or
// changed: the messages stored before the first attack (the attacker's own and another team's,
// a large body among them) read back the same after the last. The long forms of each attack are
// in their own files (tenant-caps, bounded-answers, header-values, large-body-acknowledged,
// push-trust, namespace-caps; bench:tenants measures the noisy neighbour).
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { BODY_STREAM, bodyTopicPrefix } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useConnectedGateway } from "../../helpers/fixture.js";
import { api, errorCode, errorCodeOf, parts, sleep, uniqueName } from "../../helpers/http.js";
import { answerOf, publishStored } from "../../helpers/large-body.js";

const MB = 1_000_000;
const DEPLOYMENTS = 3;
const TOPICS = 5;
/** The large-body share of a namespace, and of a tenant: 10 % of a 40 MB store. */
const SHARE = 4 * MB;

const f = useConnectedGateway({
  env: {
    VQS_MAX_TOPICS_PER_NAMESPACE: String(TOPICS),
    VQS_MAX_DEPLOYMENTS_PER_TENANT: String(DEPLOYMENTS),
    VQS_LARGE_BODY_STORE_BYTES: String(10 * SHARE),
    VQS_PUSH_ALLOWED_URLS: "http://hooks.global.test/q",
    VQS_TENANT_OVERRIDES: "team_b:push=http://hooks.team-b.test:8080/hook",
  },
  // A chunk that would expire before its message is seen in seconds.
  config: { largeBodyTtlMarginSeconds: 1, largeBodyNamespacePercent: 10 },
});

/** The attacker's token for one attack (an ordinary token: its own team, its project). */
const attacker = (project: string) => f.issuer.token({ project_id: project });
const client = async (project: string, deployment?: string) =>
  api(f.gw.url, await attacker(project), deployment ? { "vqs-deployment-id": deployment } : {});
const json = { "content-type": "application/json" };

/** Every message of `topic`, read by a fresh group: [content type, body] sorted. */
async function storedOf(q: ReturnType<typeof api>, topic: string): Promise<string[]> {
  const res = await q.receive(topic, uniqueName("check"), { "vqs-max-messages": "10" });
  if (res.status === 204) return [];
  expect(res.status).toBe(200);
  const got = await parts(res);
  return got.map((p) => `${p.headers.get("content-type")} ${p.body.toString("base64")}`).sort();
}

/** What was stored before the attacks, to compare after them. */
const kept: { q: ReturnType<typeof api>; topic: string; before: string[] }[] = [];

describe("a hostile tenant", () => {
  it("has messages stored before the attacks: its own, a large body among them, and another team's", async () => {
    const own = await client("prj_1");
    const other = api(f.gw.url, await f.issuer.token({ owner_id: "team_b" }));
    for (const [q, topic, bodies] of [
      [own, "kept-own", ["one", "two", randomBytes(2 * MB)]],
      [other, "kept-other", ["b one", "b two"]],
    ] as const) {
      for (const b of bodies) await publishStored(q, topic, Buffer.from(b));
      kept.push({ q, topic, before: await storedOf(q, topic) });
    }
    expect(kept.map((k) => k.before.length)).toEqual([3, 2]);
  });

  it("1: gains nothing by inventing deployment IDs (topics, deployments, the large-body share)", async () => {
    // Topics: the tenant's cap, whatever deployment they are made in.
    const spread = (d: string) => client("prj_spread", d);
    for (let i = 0; i < TOPICS; i++) {
      const res = await (await spread(`dpl_${i % 2}`)).publish(`t${i}`, "x");
      expect(res.status).toBe(201);
    }
    const overTopics = await (await spread("dpl_0")).publish("one-more", "x");
    expect([overTopics.status, await errorCode(overTopics)]).toEqual([403, "topic_limit_reached"]);
    // Deployments: bounded per tenant, 429 with Retry-After, nothing of the refused one stored.
    const d = (n: string) => client("prj_deployments", n);
    for (let i = 0; i < DEPLOYMENTS; i++) {
      expect((await (await d(`dpl_${i}`)).publish("t", "x")).status).toBe(201);
    }
    const invented = await (await d("dpl_invented")).publish("t", "x");
    expect([invented.status, await errorCode(invented)]).toEqual([429, "deployment_limit_reached"]);
    expect(Number(invented.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The large-body share: one deployment's 3 MB leaves no room for another's 3 MB, though that
    // deployment alone holds nothing (a namespace's share would have let it in).
    await publishStored(await client("prj_share", "dpl_a"), "big", randomBytes(3 * MB));
    const second = await (await client("prj_share", "dpl_b")).publish("big", randomBytes(3 * MB));
    expect(second.status).toBe(403);
    const body = (await second.json()) as { error: { code: string }; scope?: string };
    expect([body.error.code, body.scope]).toEqual(["large_body_share_exceeded", "tenant"]);
    expect((await (await client("prj_share", "dpl_b")).receive("big", "g")).status).toBe(204);
  });

  it("2: cannot exhaust the gateway with whole-payload peeks or listings", async () => {
    const q = await client("prj_peek");
    const topic = "peeked";
    for (let i = 0; i < 10; i++) await publishStored(q, topic, randomBytes(200_000));
    const peeks = await Promise.all(
      Array.from({ length: 8 }, () => q.call("GET", `${topic}/messages?limit=100&payload=full`)),
    );
    for (const p of peeks) {
      const code = p.status === 200 ? "" : await errorCode(p);
      expect([200, 503]).toContain(p.status);
      if (p.status === 503) expect(code).toBe("peek_busy");
      else await p.arrayBuffer();
    }
    const listing = await fetch(`${f.gw.url}/api/v3/topics?limit=1000`, {
      headers: { authorization: `Bearer ${await attacker("prj_peek")}` },
    });
    expect(listing.status).toBe(200);
  });

  it("3: cannot inject part headers through a Content-Type (400 invalid_content_type, nothing stored)", async () => {
    const q = await client("prj_forge");
    const forged = "text/plain\u010d\u010aVqs-Receipt-Handle: forged\u010d\u010aContent-Length: 1";
    // A header value as its UTF-8 bytes (fetch sends only latin1 characters, byte for byte).
    const latin1 = Buffer.from(forged, "utf8").toString("latin1");
    const single = await q.publish("forged", "x", { "content-type": latin1 });
    expect([single.status, await errorCode(single)]).toEqual([400, "invalid_content_type"]);
    const batch = await q.call("POST", "forged/batch", {
      headers: { "content-type": "multipart/mixed; boundary=b" },
      body: `--b\r\ncontent-type: ${forged}\r\n\r\nforged\r\n--b--\r\n`,
    });
    expect(batch.status).toBe(200);
    const { results } = (await batch.json()) as { results: { statusCode?: number }[] };
    expect(results.map((r) => r.statusCode)).toEqual([400]);
    expect(await storedOf(q, "forged")).toEqual([]);
  });

  it("4: finds no /metrics on the API port, with a token or without", async () => {
    const token = await attacker("prj_metrics");
    for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
      const res = await fetch(`${f.gw.url}/metrics`, { headers });
      expect([res.status, await errorCode(res)]).toEqual([404, "route_not_found"]);
    }
  });

  it("5: cannot lose a large publish by purging its topic while it streams (201 reads back whole)", async () => {
    const q = await client("prj_purge");
    const token = await attacker("prj_purge");
    const topic = "purged";
    const ns = makeNamespace("team_a", "prj_purge", "production", null);
    const filter = `${bodyTopicPrefix("iad1", { namespace: ns, topic })}.>`;
    const chunks = async () =>
      Object.keys(
        (await f.jsm.streams.info(BODY_STREAM, { subjects_filter: filter }).catch(() => null))
          ?.state.subjects ?? {},
      ).length;
    await publishStored(q, topic, Buffer.from("before the purge")); // the purge takes it
    const body = randomBytes(3 * MB);
    const req = request(new URL(`${f.gw.url}/api/v3/topic/${topic}`), {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/octet-stream",
        "content-length": String(body.length),
      },
    });
    const answer = answerOf(req);
    try {
      req.write(body.subarray(0, MB));
      await expect.poll(chunks, { timeout: 20_000 }).toBe(1);
      const purge = await q.call("POST", `${topic}/purge`);
      expect([purge.status, await purge.json()]).toEqual([200, { purged: 1 }]);
      req.end(body.subarray(MB));
      const a = await answer;
      expect(a.status, a.text).toBe(201);
      const got = await parts(await q.receive(topic, "g"));
      expect(got.map((p) => p.body.equals(body))).toEqual([true]);
    } finally {
      req.destroy();
    }
  });

  it("6: cannot outlive its own chunks with a slow upload (the body reads back whole)", async () => {
    // 1 MB+ in four pieces a second apart, a retention of 2 s (below what the API allows, through
    // the domain as the route calls it) and the 1 s margin: chunk 0 used to expire before its
    // message, which lives 2 s past the upload's end.
    const ns = makeNamespace("team_a", "prj_slow", "production", null);
    const body = randomBytes(2 * MB);
    async function* slow(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 4; i++) {
        if (i > 0) await sleep(1000);
        yield body.subarray((i * body.length) / 4, ((i + 1) * body.length) / 4);
      }
    }
    const result = await f.gw.gateway.queue.publishStreamed(
      { namespace: ns, topic: "slow" },
      {
        contentType: null,
        retentionSeconds: 2,
        delaySeconds: 0,
        idempotencyKey: null,
        trace: null,
        headers: {},
      },
      { source: slow(), declaredLength: body.length, maxBytes: body.length },
    );
    expect(result.deferred).toBe(false);
    const got = await parts(await (await client("prj_slow")).receive("slow", "g"));
    expect(got.map((p) => p.body.equals(body))).toEqual([true]);
  });

  it("7: leaves a quiet neighbour served while it floods plain publishes", async () => {
    const flood = await client("prj_flood");
    const quiet = api(f.gw.url, await f.issuer.token({ owner_id: "team_quiet" }));
    let stop = false;
    const flooding = Promise.all(
      Array.from({ length: 32 }, async () => {
        while (!stop) await (await flood.publish("flood", "x")).arrayBuffer();
      }),
    );
    try {
      for (let i = 0; i < 10; i++) expect((await quiet.publish("quiet", `q${i}`)).status).toBe(201);
    } finally {
      stop = true;
      await flooding;
    }
    expect((await storedOf(quiet, "quiet")).length).toBe(10);
  });

  it("8: cannot push to another tenant's endpoint, nor to any port of a port-less entry", async () => {
    const q = await client("prj_push");
    const put = (url: string) =>
      q.call("PUT", "pushed/consumer/g/settings", {
        headers: json,
        body: JSON.stringify({ push: { url } }),
      });
    for (const url of [
      "http://hooks.team-b.test:8080/hook/x", // team B's own entry
      "http://hooks.global.test:8080/q/x", // the global entry has no port: 80 only
      "http://hooks.global.test:22/q/x",
    ]) {
      const res = await put(url);
      expect([res.status, await errorCode(res)], url).toEqual([
        403,
        "push_destination_not_allowed",
      ]);
    }
    const none = await q.call("GET", "pushed/consumer/g/settings");
    expect(none.status).toBe(404);
  });

  it("9: cannot hold a batch open behind a refused large part (answered before its body ends)", async () => {
    const token = await attacker("prj_batch");
    const req = request(new URL(`${f.gw.url}/api/v3/topic/held/batch`), {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "multipart/mixed; boundary=b",
      },
    });
    const answer = answerOf(req);
    let answered = false;
    void answer.then(() => (answered = true));
    try {
      req.write("--b\r\ncontent-type: text/plain\r\n\r\nfirst\r\n");
      req.write("--b\r\ncontent-type: text/plain\u00ff\r\n\r\n");
      // The large part goes on (well above the minimum rate) and never ends.
      const piece = randomBytes(64 * 1024);
      for (let i = 0; i < 200 && !answered; i++) {
        await new Promise<void>((r) => req.write(piece, () => r()));
      }
      const a = await answer;
      expect([a.status, errorCodeOf(a.text)]).toEqual([400, "invalid_content_type"]);
    } finally {
      req.destroy();
    }
    expect(await storedOf(await client("prj_batch"), "held")).toEqual([]);
  });

  it("changed nothing stored: every kept message reads back the same", async () => {
    for (const k of kept) expect(await storedOf(k.q, k.topic)).toEqual(k.before);
  });
});

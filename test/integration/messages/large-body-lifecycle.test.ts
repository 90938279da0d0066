// A large body lives and dies with its message: TTL on every chunk (a real expiry), purge,
// delete topic, dead-lettering and redrive (copies of their own), a keyed retry storing one body,
// a client that hangs up mid-upload, a gateway that died mid-upload (the sweep), a corrupt body never
// delivered as good. Real nats-server; chunks counted in the body stream.
import { headers } from "@nats-io/transport-node";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startGatewayProcess } from "../../../src/dev/spawn-gateway.js";
import { uploadBoundMs } from "../../../src/nats/bodies/jetstream-bodies.js";
import { BODY_STREAM, bodyTopicPrefix } from "../../../src/nats/core/naming.js";
import { leaderGet } from "../../../src/nats/messages/reads.js";
import { makeNamespace, namespaceLabel } from "../../../src/queue/namespace.js";
import { useLargeBodyGateway } from "../../helpers/fixture.js";
import { parts, uniqueName } from "../../helpers/http.js";
import { metricLines } from "../../helpers/metrics.js";
import { AUDIENCE, ISSUER, TEAM_A_NAMESPACE } from "../../helpers/issuer.js";
import { publishStored } from "../../helpers/large-body.js";
import { eventually } from "../../helpers/wait.js";

const MB = 1_000_000;
const NS = TEAM_A_NAMESPACE;

// The sweep runs when a test asks; an uncommitted body is an orphan after a second; a body
// outlives its message's retention by a second.
const f = useLargeBodyGateway();

/** Messages (chunks and commit markers) of `topic`'s bodies in the body stream. */
async function chunksOf(topic: string): Promise<number> {
  const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
  try {
    const info = await f.jsm.streams.info(BODY_STREAM, { subjects_filter: filter });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  } catch {
    return 0;
  }
}

/** Distinct bodies of `topic` in the body stream. */
async function bodiesOf(topic: string): Promise<number> {
  const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
  const info = await f.jsm.streams.info(BODY_STREAM, { subjects_filter: filter });
  return Object.keys(info.state.subjects ?? {}).length;
}

/** What a gateway killed mid-upload leaves in `topic`: chunks, and no message, no commit marker. */
async function leaveOrphan(topic: string): Promise<void> {
  const subject = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.${randomBytes(16).toString("hex")}`;
  for (let i = 0; i < 3; i++) {
    const h = headers();
    h.set("Vqs-Chunk", String(i));
    h.set("Nats-TTL", "3600");
    if (i === 0) h.set("Vqs-Body-Namespace", "orphans/p/e");
    await f.nc.request(subject, randomBytes(256 * 1024), { headers: h, timeout: 5000 });
  }
}

/** An upload of 20 MB that has sent 8 MB, once chunks of it are in the store. */
async function halfUpload(gatewayUrl: string, topic: string) {
  const req = request(new URL(`${gatewayUrl}/api/v3/topic/${topic}`), {
    method: "POST",
    headers: {
      authorization: `Bearer ${await f.issuer.token()}`,
      "content-length": String(20 * MB),
    },
  });
  req.on("error", () => undefined);
  req.write(randomBytes(8 * MB));
  await eventually(async () => (await chunksOf(topic)) > 0, 10_000);
  expect(await chunksOf(topic)).toBeGreaterThan(0);
  return req;
}

const publish = (topic: string, body: Buffer, h: Record<string, string> = {}) =>
  publishStored(f.q, topic, body, h);

async function settings(topic: string, group: string, body: unknown) {
  const res = await f.q.call("PUT", `${topic}/consumer/${group}/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

async function metric(name: string): Promise<string> {
  return (await metricLines(f.gw.metricsUrl, name)).join("\n");
}

describe("a large body's lifecycle", () => {
  it("gives every chunk its message's retention as TTL, plus the configured read margin, counted from the latest its message may be published", async () => {
    const topic = uniqueName();
    await publish(topic, randomBytes(2 * MB), { "vqs-retention-seconds": "120" });
    const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
    const first = await leaderGet(f.jsm, BODY_STREAM, { seq: 1, next_by_subj: filter });
    // Chunk 0 is written when the upload begins: its TTL covers the longest the upload of 2 MB
    // may last at the default minimum rate (64 KiB/s over 60 s windows), then the message's
    // publish (the default 5 s request timeout), its retention and the margin.
    const rate = { minBytesPerSecond: 65_536, windowSeconds: 60 };
    const publishBy = Math.ceil((uploadBoundMs(2 * MB, rate, 5000) + 5000) / 1000);
    expect(first?.header.get("Nats-TTL")).toBe(String(120 + 1 + publishBy));
    const marker = await leaderGet(f.jsm, BODY_STREAM, { last_by_subj: filter });
    expect(marker?.header.get("Vqs-Body-Commit")).toBe(String(2 * MB));
    expect(marker?.header.get("Nats-TTL")).toBe(String(120 + 1));
    const info = await f.jsm.streams.info(BODY_STREAM);
    expect(info.config.allow_msg_ttl).toBe(true);
  });

  it("really expires: bodies whose message is gone leave the store by their TTL, and the stored bytes metric returns to zero", async () => {
    // What stays behind when a message expires (a committed body), and what a gateway killed
    // between the body and its message leaves (an uncommitted one): the sweep never removes the
    // first, only the TTL does. Written with the store's headers, but a TTL of 4 s (a publish's
    // is its retention, 60 s at least, plus the upload's bound and the margin, above); in a
    // namespace of their own, so its usage is theirs alone.
    const bodies = f.gw.gateway.jetstream.bodies;
    const namespace = makeNamespace("expiry-team", "p", "e", null);
    const label = namespaceLabel(namespace);
    const topic = uniqueName();
    const address = { namespace, topic };
    const chunk = randomBytes(256 * 1024);
    const write = async (commit: boolean) => {
      const subject = `${bodyTopicPrefix("iad1", address)}.${randomBytes(16).toString("hex")}`;
      for (let i = 0; i < 3; i++) {
        const h = headers();
        h.set("Vqs-Chunk", String(i));
        h.set("Nats-TTL", "4");
        if (i === 0) h.set("Vqs-Body-Namespace", label);
        await f.nc.request(subject, chunk, { headers: h, timeout: 5000 });
      }
      if (!commit) return;
      const h = headers();
      h.set("Vqs-Body-Commit", String(3 * chunk.length));
      h.set("Vqs-Body-Namespace", label);
      h.set("Nats-TTL", "4");
      await f.nc.request(subject, new Uint8Array(0), { headers: h, timeout: 5000 });
    };
    await write(true);
    await write(false); // never committed
    const body = { length: 3 * chunk.length };
    const filter = `${bodyTopicPrefix("iad1", address)}.>`;
    const stored = async () => {
      const info = await f.jsm.streams.info(BODY_STREAM, { subjects_filter: filter });
      return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
    };
    expect(await stored()).toBeGreaterThan(0);
    const before = await bodies.sweep();
    expect(before.usage.get(label)).toBeGreaterThanOrEqual(body.length);
    expect(await metric("vqs_large_body_stored_bytes")).toContain(`queue_namespace="${label}"`);
    // No sweep until they are gone: nats-server's TTL removes them.
    await expect.poll(stored, { timeout: 20_000, interval: 250 }).toBe(0);
    const after = await bodies.sweep();
    expect(after.usage.get(label) ?? 0).toBe(0);
    expect(await metric("vqs_large_body_stored_bytes")).not.toContain(`queue_namespace="${label}"`);
  });

  it("goes with its topic's purge and deletion", async () => {
    const purged = uniqueName();
    const deleted = uniqueName();
    await publish(purged, randomBytes(2 * MB));
    await publish(deleted, randomBytes(2 * MB));
    expect(await chunksOf(purged)).toBeGreaterThan(0);
    expect((await f.q.call("POST", `${purged}/purge`)).status).toBe(200);
    expect(await chunksOf(purged)).toBe(0);
    expect((await f.q.call("DELETE", deleted)).status).toBe(204);
    expect(await chunksOf(deleted)).toBe(0);
  });

  it("is copied whole to the dead-letter topic and back by redrive, leaving no chunk behind", async () => {
    const topic = uniqueName("poison");
    const dlq = `${topic}-dead`;
    const body = randomBytes(3 * MB);
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
    await publish(topic, body);
    const [first] = await parts(
      await f.q.receive(topic, "workers", { "vqs-visibility-timeout-seconds": "0" }),
    );
    expect(first!.body.equals(body)).toBe(true);
    // The second delivery is one too many: the message moves, its body copied.
    expect((await f.q.receive(topic, "workers")).status).toBe(204);
    expect(await bodiesOf(dlq)).toBe(1);
    // The original goes (purge): the copy stays whole.
    await f.q.call("POST", `${topic}/purge`);
    expect(await chunksOf(topic)).toBe(0);
    const [copy] = await parts(
      await f.q.receive(dlq, "inspect", { "vqs-visibility-timeout-seconds": "0" }),
    );
    expect(copy!.body.equals(body)).toBe(true);
    // Redrive: a new copy in the source topic, the dead-letter one removed with its body.
    const res = await f.q.call("POST", `${dlq}/redrive`, {
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await res.json()).toMatchObject({ moved: 1, remaining: 0 });
    expect(await chunksOf(dlq)).toBe(0);
    const [back] = await parts(await f.q.receive(topic, "again"));
    expect(back!.body.equals(body)).toBe(true);
    await f.q.call("DELETE", topic);
    await f.q.call("DELETE", dlq);
    expect((await chunksOf(topic)) + (await chunksOf(dlq))).toBe(0);
  });

  it("keeps one body for a keyed 50 MB publish retried", async () => {
    const topic = uniqueName();
    const body = randomBytes(50 * MB);
    const key = { "vqs-idempotency-key": "big-1" };
    const id = await publish(topic, body, key);
    const again = await publish(topic, body, key);
    expect(again).not.toBe(id); // the duplicate's own ID, pointing at the first
    expect(await bodiesOf(topic)).toBe(1);
    const [p] = await parts(await f.q.receive(topic, "g"));
    expect(createHash("sha256").update(p!.body).digest("hex")).toBe(
      createHash("sha256").update(body).digest("hex"),
    );
    await f.q.call("DELETE", topic);
  });

  it("keeps nothing of an upload whose client hangs up half-way", async () => {
    const topic = uniqueName();
    const req = await halfUpload(f.gw.url, topic);
    req.destroy(); // the client goes
    await expect.poll(() => chunksOf(topic), { timeout: 10_000 }).toBe(0);
    expect((await f.q.receive(topic, "g")).status).toBe(204);
  });

  it("leaves no chunk of an upload whose gateway process is killed (SIGKILL) mid-upload, once swept", async () => {
    // A real gateway process on the same NATS, killed while a body streams into it: no purge
    // runs, so its chunks stay until a sweep (here the test gateway's, grace 1 s) finds no
    // message for them.
    const dir = await mkdtemp(join(tmpdir(), "vqs-killed-"));
    const victim = await startGatewayProcess({
      env: {
        PORT: "0",
        VQS_METRICS_PORT: "0",
        HOST: "127.0.0.1",
        NATS_URL: f.nats.url,
        VQS_REGION: "iad1",
        VQS_OIDC_JWKS_URL: f.issuer.jwksUrl,
        VQS_OIDC_ISSUER: ISSUER,
        VQS_OIDC_AUDIENCE: AUDIENCE,
        VQS_RECEIPT_SECRET: "killed-gateway-receipt-secret-0123456789",
        LOG_LEVEL: "warn",
      },
      logFile: join(dir, "gateway.log"),
    });
    try {
      const topic = uniqueName();
      const req = await halfUpload(victim.url, topic);
      await victim.kill();
      req.destroy();
      // Nothing cleaned up after the killed gateway: the chunks are there, no message.
      expect(await chunksOf(topic)).toBeGreaterThan(0);
      // Past the grace, a sweep takes them.
      const swept = await eventually(
        async () => {
          await f.gw.gateway.jetstream.bodies.sweep();
          return (await chunksOf(topic)) === 0;
        },
        10_000,
        200,
      );
      expect(swept).toBe(true);
      expect((await f.q.receive(topic, "g")).status).toBe(204);
    } finally {
      await victim.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sweeps away a body no message points at (a gateway killed mid-upload), and counts usage per namespace", async () => {
    const topic = uniqueName();
    await leaveOrphan(topic);
    // A committed body next to it stays.
    const kept = randomBytes(2 * MB);
    await publish(topic, kept);
    expect(await bodiesOf(topic)).toBe(2);
    // Past the grace, a sweep takes the orphan.
    let removed = 0;
    let usage = new Map<string, number>();
    const swept = await eventually(
      async () => {
        ({ removed, usage } = await f.gw.gateway.jetstream.bodies.sweep());
        return removed >= 1;
      },
      10_000,
      200,
    );
    expect(swept).toBe(true);
    expect(await bodiesOf(topic)).toBe(1);
    expect(usage.get("orphans/p/e") ?? 0).toBe(0);
    expect(await metric("vqs_large_body_stored_bytes")).toContain("queue_namespace=");
    const [p] = await parts(await f.q.receive(topic, "g"));
    expect(p!.body.equals(kept)).toBe(true);
    // Once its topic is gone the namespace stores nothing more of it.
    await f.q.call("DELETE", topic);
    expect(await chunksOf(topic)).toBe(0);
  });

  it("keeps a body whose commit marker was lost when its message exists (the sweep finds it)", async () => {
    const topic = uniqueName();
    const body = randomBytes(2 * MB);
    await publish(topic, body);
    // The gateway died between the message's PubAck and the marker: remove the marker.
    const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
    const marker = await f.jsm.streams.getMessage(BODY_STREAM, { last_by_subj: filter });
    expect(marker?.header.get("Vqs-Body-Commit")).toBe(String(body.length));
    await f.jsm.streams.deleteMessage(BODY_STREAM, marker!.seq);
    // An orphan left after it: once a sweep has taken the orphan, this body too was past the
    // grace in that sweep (and is kept for its message).
    const probe = uniqueName();
    await leaveOrphan(probe);
    const swept = await eventually(
      async () => {
        await f.gw.gateway.jetstream.bodies.sweep();
        return (await chunksOf(probe)) === 0;
      },
      10_000,
      200,
    );
    expect(swept).toBe(true);
    const [p] = await parts(await f.q.receive(topic, "g"));
    expect(p!.body.equals(body)).toBe(true);
    await f.q.call("DELETE", topic);
  });

  it("never delivers a body with a chunk missing as a good one: the response is cut off", async () => {
    const topic = uniqueName();
    await publish(topic, randomBytes(3 * MB));
    const filter = `${bodyTopicPrefix("iad1", { namespace: NS, topic })}.>`;
    const chunk = await leaderGet(f.jsm, BODY_STREAM, { seq: 1, next_by_subj: filter });
    const second = await leaderGet(f.jsm, BODY_STREAM, {
      seq: chunk!.seq + 1,
      next_by_subj: filter,
    });
    await f.jsm.streams.deleteMessage(BODY_STREAM, second!.seq);
    const res = await f.q.receive(topic, "g");
    expect(res.status).toBe(200);
    await expect(parts(res)).rejects.toThrow();
    await f.q.call("DELETE", topic);
  });
});

// Idempotency keys under concurrency: racing publishes of one key through two gateways store one
// message; the key is free again exactly when that message expires; its record in the topic's
// stream is deleted then (here by its timer, as on servers without per-message TTL; on 2.11+
// records carry a TTL, tested in message-ttl.test.ts); a racer slower than the duplicate window
// loses and leaves nothing.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyToken } from "../../../src/nats/messages/message-codec.js";
import { topicNames } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let a: TestGateway;
let b: TestGateway;
let nc: NatsConnection;
let jsm: JetStreamManager;
let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

const NAMESPACE = makeNamespace("team_a", "prj_1", "production", null);
const names = (topic: string) => topicNames("iad1", { namespace: NAMESPACE, topic });

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  a = await startGateway(nats.url, issuer, { now: clock });
  b = await startGateway(nats.url, issuer, { now: clock });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  await Promise.all([a?.close(), b?.close()]);
  await issuer?.close();
  await nats?.dispose();
});

/** Key records currently stored in the topic's stream. */
async function keyRecords(topic: string): Promise<number> {
  const n = names(topic);
  const info = await jsm.streams.info(n.stream, { subjects_filter: `${n.keyPrefix}.>` });
  return Object.values(info.state.subjects ?? {}).reduce((s, c) => s + c, 0);
}

async function race(topic: string, key: string, retention: string) {
  const token = await issuer.token();
  const gateways = [api(a.url, token), api(b.url, token)];
  const answers = await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      const res = await gateways[i % 2]!.publish(topic, `attempt ${i}`, {
        "vqs-idempotency-key": key,
        "vqs-retention-seconds": retention,
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { messageId: string }).messageId;
    }),
  );
  return {
    stored: answers.filter((id) => id.startsWith("m")),
    duplicates: answers.filter((id) => id.startsWith("x")),
  };
}

describe("idempotency keys", () => {
  it("stores exactly one message when 50 publishes of one key race through two gateways", async () => {
    offsetMs = 0;
    const topic = uniqueName("race");
    const q = api(a.url, await issuer.token());
    await q.publish(topic, "warm-up"); // the stream exists, so the race is about the key only
    const { stored, duplicates } = await race(topic, "order-42", "3600");
    expect(stored).toHaveLength(1);
    expect(duplicates).toHaveLength(49);
    // Every duplicate points at the one original.
    for (const id of duplicates.slice(0, 5)) {
      const res = await q.receiveById(topic, "inspect", id);
      expect(res.status).toBe(409);
      expect(((await res.json()) as { originalMessageId: string }).originalMessageId).toBe(
        stored[0],
      );
    }
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    const keyed = got.filter((p) => p.body.toString().startsWith("attempt"));
    expect(keyed).toHaveLength(1);
    expect(keyed[0]!.headers.get("vqs-message-id")).toBe(stored[0]);
    expect(await keyRecords(topic)).toBe(1);
  });

  it("frees the key exactly when the original expires, and races again to one message", async () => {
    offsetMs = 0;
    const topic = uniqueName("expiry");
    const q = api(a.url, await issuer.token());
    const first = await race(topic, "k", "60");
    expect(first.stored).toHaveLength(1);
    offsetMs = 59_000; // still alive: a duplicate
    const before = await q.publish(topic, "late", { "vqs-idempotency-key": "k" });
    expect(((await before.json()) as { messageId: string }).messageId).toMatch(/^x/);
    offsetMs = 60_500; // expired: the key stores a new message, once
    const second = await race(topic, "k", "3600");
    expect(second.stored).toHaveLength(1);
    expect(second.stored[0]).not.toBe(first.stored[0]);
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.headers.get("vqs-message-id"))).toEqual(second.stored);
  });

  it("deletes a key's record by its timer when its message expires, so records are bounded by live keys", async () => {
    offsetMs = 0;
    const topic = uniqueName("records");
    // The timers' way (messageTtl: "off", as on servers without per-message TTL). a, b and
    // this gateway stop handling timers; once the keys are stored, a fourth gateway whose clock
    // runs 2 minutes ahead finds their timers due at once. (Started earlier, it would look at
    // each key before its record was written: the timer is added before the message is stored.)
    const timed = await startGateway(nats.url, issuer, { config: { messageTtl: "off" } });
    const q = api(timed.url, await issuer.token());
    await Promise.all([a, b, timed].map((g) => g.gateway.jetstream.scheduler.stop()));
    let ahead: TestGateway | undefined;
    try {
      for (let i = 0; i < 20; i++) {
        const res = await q.publish(topic, "x", {
          "vqs-idempotency-key": `key-${i}`,
          "vqs-retention-seconds": "60",
        });
        expect(res.status).toBe(201);
      }
      await q.publish(topic, "x", {
        "vqs-idempotency-key": "long",
        "vqs-retention-seconds": "3600",
      });
      expect(await keyRecords(topic)).toBe(21);
      ahead = await startGateway(nats.url, issuer, { now: () => Date.now() + 120_000 });
      await expect.poll(() => keyRecords(topic), { timeout: 10_000, interval: 200 }).toBe(1);
    } finally {
      await ahead?.close();
      await timed.close();
      a.gateway.jetstream.scheduler.start();
      b.gateway.jetstream.scheduler.start();
    }
  });

  it("discards the copy of a racer slower than the duplicate window and answers it as a duplicate", async () => {
    offsetMs = 0;
    const topic = uniqueName("slow");
    const q = api(a.url, await issuer.token());
    await q.publish(topic, "warm-up");
    const n = names(topic);
    const js = jetstream(nc);
    const token = keyToken("slow-key");
    const sendAs = (body: string, waitMs: number) => async (msgID: string) => {
      await new Promise((r) => setTimeout(r, waitMs));
      // A fresh Nats-Msg-Id stands for one that left the duplicate window while this racer
      // stalled: the server stores the copy.
      return js.publish(n.ready, body, {
        msgID: waitMs > 0 ? `${msgID}.late` : msgID,
        headers: (await import("../../../src/nats/messages/message-codec.js")).encodeHeaders({
          payload: new Uint8Array(),
          contentType: null,
          retentionSeconds: 3600,
          delaySeconds: 0,
          idempotencyKey: "slow-key",
          trace: null,
          headers: {},
          nonce: "n".repeat(16),
        }),
      });
    };
    const noTimer = () => Promise.resolve();
    const [slow, fast] = await Promise.all([
      a.gateway.jetstream.keys.publish(n, token, 3_600_000, sendAs("slow", 300), noTimer),
      b.gateway.jetstream.keys.publish(n, token, 3_600_000, sendAs("fast", 0), noTimer),
    ]);
    expect(fast.kind).toBe("stored");
    expect(slow).toEqual({
      kind: "duplicate",
      originalSeq: fast.kind === "stored" ? fast.seq : -1,
    });
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString())).toEqual(["warm-up", "fast"]);
  });
});

// A retried publish is the same publish. Gateway A talks to NATS through a proxy that loses the
// reply to one chosen request (the request itself takes effect); gateway B talks to NATS
// directly and takes the client's retry. Whatever reply is lost, the key ends with exactly one
// stored message, a 201 names that message (its own ID, or a duplicate's ID leading to it), and
// the key's records will go: each carries a per-message TTL (nats-server 2.11+), or the key has
// the timer that deletes them.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyToken } from "../../src/nats/messages/message-codec.js";
import { TIMER_STREAM, topicNames } from "../../src/nats/core/naming.js";
import { makeNamespace } from "../../src/queue/namespace.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { startTestNats, type TestNats } from "../helpers/processes/nats.js";
import { startNatsProxy, type NatsProxy } from "../helpers/processes/nats-proxy.js";

let nats: TestNats;
let proxy: NatsProxy;
let issuer: TestIssuer;
let a: TestGateway;
let b: TestGateway;
let nc: NatsConnection;
let jsm: JetStreamManager;

const NAMESPACE = makeNamespace("team_a", "prj_1", "production", null);

beforeAll(async () => {
  nats = await startTestNats();
  proxy = await startNatsProxy(nats.port);
  issuer = await startIssuer();
  a = await startGateway(proxy.url, issuer, { config: { requestTimeoutMs: 1000 } });
  b = await startGateway(nats.url, issuer);
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  await Promise.all([a?.close(), b?.close()]);
  await issuer?.close();
  await proxy?.close();
  await nats?.dispose();
});

/** Every message of the topic, through a fresh group: [message ID, delivery count, body]. */
async function drain(topic: string): Promise<[string, string, string][]> {
  const q = api(b.url, await issuer.token());
  const group = uniqueName("drain");
  const out: [string, string, string][] = [];
  for (let empty = 0; empty < 2;) {
    const res = await q.receive(topic, group, { "vqs-max-messages": "10" });
    if (res.status === 204) {
      empty++;
      continue;
    }
    if (res.status !== 200) throw new Error(`receive: ${res.status} ${await res.text()}`);
    for (const p of await parts(res)) {
      const h = (k: string) => p.headers.get(k) ?? "";
      out.push([h("vqs-message-id"), h("vqs-delivery-count"), p.body.toString()]);
    }
  }
  return out;
}

/**
 * Whether the key's records will be deleted: its record carries a per-message TTL, or the
 * schedule holds a timer that deletes them.
 */
async function keyRecordsGo(topic: string, key: string): Promise<boolean> {
  const n = topicNames("iad1", { namespace: NAMESPACE, topic });
  const subject = `${n.keyPrefix}.${keyToken(key)}`;
  const record = await jsm.streams
    .getMessage(n.stream, { last_by_subj: subject })
    .catch(() => null);
  if (record?.header?.get("Nats-TTL")) return true;
  const info = await jsm.streams.info(TIMER_STREAM).catch(() => null);
  if (!info) return false;
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(TIMER_STREAM, { seq }).catch(() => null);
    if (m && (JSON.parse(m.string()) as { k?: string }).k === subject) return true;
  }
  return false;
}

describe("a keyed publish whose reply is lost", () => {
  it("answers its own message's ID when the key's claim landed but its answer was lost", async () => {
    const token = await issuer.token();
    const topic = uniqueName("lost-claim");
    const lost = proxy.loseReplyTo((subject) => subject.includes(".k."));
    const res = await api(a.url, token).publish(topic, "once", { "vqs-idempotency-key": "k1" });
    await lost;
    expect(res.status).toBe(201);
    const { messageId } = (await res.json()) as { messageId: string };
    expect(messageId.startsWith("m")).toBe(true);
    // The client's retry (it need not make one) is a duplicate of that message.
    const retry = await api(b.url, token).publish(topic, "once", { "vqs-idempotency-key": "k1" });
    expect(((await retry.json()) as { messageId: string }).messageId.startsWith("x")).toBe(true);
    expect((await drain(topic)).map(([id]) => id)).toEqual([messageId]);
    expect(await keyRecordsGo(topic, "k1")).toBe(true);
  });

  it("answers 503 when the store's answer is lost; the retry is a duplicate of that one message", async () => {
    const token = await issuer.token();
    const topic = uniqueName("lost-store");
    await api(b.url, token).publish(topic, "warm-up");
    const lost = proxy.loseReplyTo(
      (subject, headers) => subject.endsWith(".m") && headers.includes("Nats-Msg-Id: k."),
    );
    const first = await api(a.url, token).publish(topic, "once", { "vqs-idempotency-key": "k2" });
    await lost;
    expect(first.status).toBe(503);
    const retry = await api(b.url, token).publish(topic, "once", { "vqs-idempotency-key": "k2" });
    expect(retry.status).toBe(201);
    const { messageId } = (await retry.json()) as { messageId: string };
    expect(messageId.startsWith("x")).toBe(true);
    const stored = (await drain(topic)).filter(([, , body]) => body === "once");
    expect(stored).toHaveLength(1);
    const byId = await api(b.url, token).receiveById(topic, "inspect", messageId);
    expect(byId.status).toBe(409);
    expect(((await byId.json()) as { originalMessageId: string }).originalMessageId).toBe(
      stored[0]![0],
    );
    expect(await keyRecordsGo(topic, "k2")).toBe(true);
  });

  it("answers 503 when a delayed message's timer is not confirmed; the retry is delivered once", async () => {
    const token = await issuer.token();
    const topic = uniqueName("lost-timer");
    await api(b.url, token).publish(topic, "warm-up");
    // The move timer of a parked message (its Nats-Msg-Id is the topic stream and sequence).
    const lost = proxy.loseReplyTo(
      (subject, headers) =>
        subject.startsWith("vqs._timers.") && headers.includes("Nats-Msg-Id: VQS_"),
    );
    const headers = { "vqs-idempotency-key": "k3", "vqs-delay-seconds": "2" };
    const first = await api(a.url, token).publish(topic, "later", headers);
    await lost;
    expect(first.status).toBe(503);
    const retry = await api(b.url, token).publish(topic, "later", headers);
    expect(retry.status).toBe(201);
    await sleep(3500);
    const delivered = (await drain(topic)).filter(([, , body]) => body === "later");
    expect(delivered.map(([, count]) => count)).toEqual(["1"]);
    expect(await keyRecordsGo(topic, "k3")).toBe(true);
  });
});

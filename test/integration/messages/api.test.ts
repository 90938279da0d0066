// Every endpoint of the v3 API against a real nats-server: publish, receive (both formats),
// receive by ID, acknowledge, extend/release, batch, and the status each outcome answers with.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName, type Body } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  groupNames,
  TIMER_SHARDS,
  TIMER_STREAM,
  timerConsumer,
  timerSubject,
} from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { TEAM_A } from "../../helpers/issuer.js";
import { scrape } from "../../helpers/metrics.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;
let q: ReturnType<typeof api>;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer);
  q = api(gw.url, await issuer.token());
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

async function publishOk(topic: string, body: Body, headers: Record<string, string> = {}) {
  const res = await q.publish(topic, body, headers);
  expect(res.status).toBe(201);
  const json = (await res.json()) as { messageId: string };
  expect(res.headers.get("vqs-message-id")).toBe(json.messageId);
  return json.messageId;
}

async function receiveParts(topic: string, group: string, headers: Record<string, string> = {}) {
  const res = await q.receive(topic, group, headers);
  if (res.status === 204) return [];
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^multipart\/mixed; boundary=/);
  return parts(res);
}

describe("publish and receive", () => {
  it("stores a message and delivers it once with every part header", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "hello", { "content-type": "text/plain; charset=utf-8" });
    const [p, ...rest] = await receiveParts(topic, "g");
    expect(rest).toEqual([]);
    expect(p!.body.toString()).toBe("hello");
    expect(p!.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(p!.headers.get("vqs-message-id")).toBe(id);
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
    expect(p!.headers.get("vqs-receipt-handle")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const ts = Date.parse(p!.headers.get("vqs-timestamp")!);
    const exp = Date.parse(p!.headers.get("vqs-expires-at")!);
    expect(Math.abs(ts - Date.now())).toBeLessThan(10_000);
    expect(exp - ts).toBe(86_400_000);
    expect((await q.receive(topic, "g")).status).toBe(204);
  });

  it("passes any binary payload through byte for byte, boundary-like text and CRLFs included", async () => {
    const topic = uniqueName();
    const tricky = Buffer.concat([
      Buffer.from("\r\n--vqs-00000000-0000-0000-0000-000000000000\r\n\r\n--"),
      randomBytes(70_000),
      Buffer.from([0, 255, 13, 10, 13, 10]),
    ]);
    const empty = Buffer.alloc(0);
    await publishOk(topic, tricky, { "content-type": "application/octet-stream" });
    await publishOk(topic, empty);
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(got).toHaveLength(2);
    expect(got[0]!.body.equals(tricky)).toBe(true);
    expect(got[1]!.body.length).toBe(0);
  });

  it("answers NDJSON with base64 bodies, and multipart when both are acceptable", async () => {
    const topic = uniqueName();
    const payload = randomBytes(300);
    const id = await publishOk(topic, payload, { "content-type": "application/x-custom" });
    const res = await q.receive(topic, "nd", { accept: "application/x-ndjson" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      messageId: id,
      deliveryCount: 1,
      contentType: "application/x-custom",
    });
    expect(Buffer.from(lines[0]!.body as string, "base64").equals(payload)).toBe(true);
    expect(typeof lines[0]!.receiptHandle).toBe("string");
    expect(Number.isNaN(Date.parse(lines[0]!.timestamp as string))).toBe(false);
    expect(Number.isNaN(Date.parse(lines[0]!.expiresAt as string))).toBe(false);

    await publishOk(topic, "x");
    const both = await q.receive(topic, "nd", { accept: "application/x-ndjson, multipart/mixed" });
    expect(both.headers.get("content-type")).toMatch(/^multipart\/mixed/);
    expect(await parts(both)).toHaveLength(1);
  });

  it("returns at most Vqs-Max-Messages (default 1, up to 10) in publish order", async () => {
    const topic = uniqueName();
    for (let i = 0; i < 12; i++) await publishOk(topic, `m${i}`);
    expect((await receiveParts(topic, "g")).map((p) => p.body.toString())).toEqual(["m0"]);
    const ten = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(ten.map((p) => p.body.toString())).toEqual(
      Array.from({ length: 10 }, (_, i) => `m${i + 1}`),
    );
    expect(
      (await receiveParts(topic, "g", { "vqs-max-messages": "10" })).map((p) => p.body.toString()),
    ).toEqual(["m11"]);
  });

  it("answers 204 for a topic that was never published to", async () => {
    expect((await q.receive(uniqueName(), "g")).status).toBe(204);
  });

  it("gives each consumer group its own view, and a new group the retained history", async () => {
    const topic = uniqueName();
    await publishOk(topic, "one");
    const a = await receiveParts(topic, "a");
    expect((await q.ack(topic, "a", a[0]!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    const b = await receiveParts(topic, "b");
    expect(b.map((p) => p.body.toString())).toEqual(["one"]);
  });

  it("answers 413 for a body over the maximum, storing nothing", async () => {
    const topic = uniqueName();
    const res = await q.publish(topic, Buffer.alloc(gw.gateway.maxMessageBytes + 1));
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe("payload_too_large");
    expect((await q.receive(topic, "g")).status).toBe(204);
    const inline = randomBytes(gw.gateway.inlineBodyBytes);
    await publishOk(topic, inline);
    expect((await receiveParts(topic, "g"))[0]!.body.equals(inline)).toBe(true);
  });

  it("takes a body just above the inline limit on nats-server 2.11+, else says why not (413)", async () => {
    const topic = uniqueName();
    const large = randomBytes(gw.gateway.inlineBodyBytes + 1);
    const reason = gw.gateway.jetstream.bodies.unsupportedReason;
    if (reason === null) {
      await publishOk(topic, large);
      expect((await receiveParts(topic, "g"))[0]!.body.equals(large)).toBe(true);
      return;
    }
    // The compatibility lanes (2.9.10, 2.10): no body store, and the answer names the server's version.
    const res = await q.publish(topic, large);
    expect(res.status).toBe(413);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("large_body_unsupported");
    expect(body.error.message).toMatch(/2\.11 or newer.*2\.(9|10)\.\d+/);
    expect((await q.receive(topic, "g")).status).toBe(204);
  });
});

describe("leases", () => {
  it("acknowledges with 204, twice, and never delivers the message again", async () => {
    const topic = uniqueName();
    await publishOk(topic, "x");
    const [p] = await receiveParts(topic, "g", { "vqs-visibility-timeout-seconds": "1" });
    const handle = p!.headers.get("vqs-receipt-handle")!;
    expect((await q.ack(topic, "g", handle)).status).toBe(204);
    expect((await q.ack(topic, "g", handle)).status).toBe(204);
    // Past the lease's end, it does not come back (a long poll waits on the server).
    expect((await q.receive(topic, "g", { "vqs-wait-seconds": "2" })).status).toBe(204);
  });

  it("redelivers an unacknowledged message when its lease runs out, with deliveryCount 2", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    const [first] = await receiveParts(topic, "g", { "vqs-visibility-timeout-seconds": "1" });
    expect((await q.receive(topic, "g")).status).toBe(204);
    const [second] = await receiveParts(topic, "g", { "vqs-wait-seconds": "10" });
    expect(second!.headers.get("vqs-message-id")).toBe(id);
    expect(second!.headers.get("vqs-delivery-count")).toBe("2");
    // The first handle is stale now: ack and extend with it answer 409 and change nothing.
    const stale = first!.headers.get("vqs-receipt-handle")!;
    const staleAck = await q.ack(topic, "g", stale);
    expect(staleAck.status).toBe(409);
    expect(await errorCode(staleAck)).toBe("receipt_handle_stale");
    expect((await q.extend(topic, "g", stale, 0)).status).toBe(409);
    expect((await q.receive(topic, "g")).status).toBe(204);
    expect((await q.ack(topic, "g", second!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
  });

  it("extends a lease from now with PATCH, answering the new deadline", async () => {
    const topic = uniqueName();
    await publishOk(topic, "x");
    const [p] = await receiveParts(topic, "g", { "vqs-visibility-timeout-seconds": "1" });
    const handle = p!.headers.get("vqs-receipt-handle")!;
    const before = Date.now();
    const res = await q.extend(topic, "g", handle, 3);
    expect(res.status).toBe(200);
    const { visibilityDeadline } = (await res.json()) as { visibilityDeadline: string };
    expect(Date.parse(visibilityDeadline) - before).toBeGreaterThanOrEqual(2900);
    // Past the first lease's end it is not back; at the extended one it is (long polls).
    expect((await q.receive(topic, "g", { "vqs-wait-seconds": "2" })).status).toBe(204);
    const [again] = await receiveParts(topic, "g", { "vqs-wait-seconds": "10" });
    expect(again!.headers.get("vqs-delivery-count")).toBe("2");
    expect(Date.now() - before).toBeGreaterThanOrEqual(2500);
  });

  it("releases at once with visibilityTimeoutSeconds 0, also through the POST alternate URL", async () => {
    const topic = uniqueName();
    await publishOk(topic, "x");
    const [p] = await receiveParts(topic, "g", { "vqs-visibility-timeout-seconds": "600" });
    const res = await q.call(
      "POST",
      `${topic}/consumer/g/lease/${p!.headers.get("vqs-receipt-handle")!}/visibility`,
      { headers: { "content-type": "application/json" }, body: '{"visibilityTimeoutSeconds":0}' },
    );
    expect(res.status).toBe(200);
    const [again] = await receiveParts(topic, "g");
    expect(again!.headers.get("vqs-delivery-count")).toBe("2");
  });

  it("answers 409 for a handle whose consumer group was removed (idle clean-up)", async () => {
    const topic = uniqueName();
    await publishOk(topic, "x");
    const [p] = await receiveParts(topic, "g");
    const ns = makeNamespace(
      TEAM_A.owner_id as string,
      TEAM_A.project_id as string,
      TEAM_A.environment as string,
      null,
    );
    const names = groupNames("iad1", { namespace: ns, topic, group: "g" });
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).consumers.delete(names.stream, names.consumer);
    await nc.close();
    const res = await q.ack(topic, "g", p!.headers.get("vqs-receipt-handle")!);
    expect(res.status).toBe(409);
    expect(await errorCode(res)).toBe("receipt_handle_stale");
    // The group starts afresh: the message is delivered again.
    expect(await receiveParts(topic, "g")).toHaveLength(1);
  });

  it("honours Vqs-Max-Concurrency with 429 and Retry-After", async () => {
    const topic = uniqueName();
    for (let i = 0; i < 3; i++) await publishOk(topic, `m${i}`);
    const got = await receiveParts(topic, "g", {
      "vqs-max-messages": "10",
      "vqs-max-concurrency": "2",
    });
    expect(got).toHaveLength(2);
    const res = await q.receive(topic, "g", { "vqs-max-concurrency": "2" });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await errorCode(res)).toBe("concurrency_limit_exceeded");
    await q.ack(topic, "g", got[0]!.headers.get("vqs-receipt-handle")!);
    expect(await receiveParts(topic, "g", { "vqs-max-concurrency": "2" })).toHaveLength(1);
  });
});

describe("delay and TTL", () => {
  it("keeps a delayed message invisible until due, then delivers it with deliveryCount 1", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "later", { "vqs-delay-seconds": "2" });
    expect((await q.receive(topic, "g")).status).toBe(204);
    const early = await q.receiveById(topic, "other", id);
    expect(early.status).toBe(409);
    // Through the server's timers (when it is due and not before: test/unit/queue/delay-rules.test.ts).
    const [p] = await receiveParts(topic, "g", { "vqs-wait-seconds": "10" });
    expect(p!.body.toString()).toBe("later");
    expect(p!.headers.get("vqs-message-id")).toBe(id);
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
  });

  it("re-arms a parked message whose timer was lost when a retry with its key comes in", async () => {
    const topic = uniqueName();
    const key = { "vqs-idempotency-key": "delayed-1", "vqs-delay-seconds": "1" };
    const id = await publishOk(topic, "once", key);
    // Lose the timer (as if the gateway died between parking the message and adding the timer).
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).streams.purge("VQS_TIMERS");
    await nc.close();
    await sleep(1500); // real time at the server: the lost timer would have fired by now
    expect((await q.receive(topic, "g")).status).toBe(204);
    const retry = await publishOk(topic, "once", key);
    expect(retry).toMatch(/^x/);
    const got = await receiveParts(topic, "g", {
      "vqs-max-messages": "10",
      "vqs-wait-seconds": "10",
    });
    expect(got.map((p) => [p.body.toString(), p.headers.get("vqs-message-id")])).toEqual([
      ["once", id],
    ]);
  });

  it("drops a malformed timer on a timer subject instead of retrying it for ever", async () => {
    const nc = await connect({ servers: nats.url });
    const topic = uniqueName();
    await publishOk(topic, "first", { "vqs-delay-seconds": "1" }); // the schedule exists
    for (const junk of ["not json", "{}", '{"s":"VQS_X","q":"1"}']) {
      for (let shard = 0; shard < TIMER_SHARDS; shard++) nc.publish(timerSubject(shard), junk);
    }
    await nc.flush();
    const id = await publishOk(topic, "later", { "vqs-delay-seconds": "1" });
    const got: Awaited<ReturnType<typeof receiveParts>> = [];
    while (got.length < 2) {
      const more = await receiveParts(topic, "g", {
        "vqs-max-messages": "10",
        "vqs-wait-seconds": "10",
      });
      if (more.length === 0) break;
      got.push(...more);
    }
    expect(got.map((p) => p.body.toString()).sort()).toEqual(["first", "later"]);
    expect(got.map((p) => p.headers.get("vqs-message-id"))).toContain(id);
    const jsm = await jetstreamManager(nc);
    for (let shard = 0; shard < TIMER_SHARDS; shard++) {
      const info = await jsm.consumers.info(TIMER_STREAM, timerConsumer(shard));
      expect(info.num_ack_pending).toBe(0);
      expect(info.num_pending).toBe(0);
    }
    await nc.close();
  });

  it("caps a delay longer than the TTL at the TTL", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "never", {
      "vqs-delay-seconds": "3600",
      "vqs-retention-seconds": "60",
    });
    const names = groupNames("iad1", {
      namespace: makeNamespace(
        TEAM_A.owner_id as string,
        TEAM_A.project_id as string,
        TEAM_A.environment as string,
        null,
      ),
      topic,
      group: "g",
    });
    const nc = await connect({ servers: nats.url });
    const stored = await (
      await jetstreamManager(nc)
    ).direct.getMessage(names.stream, { seq: parseInt(id.slice(1, id.indexOf("_")), 36) });
    await nc.close();
    expect(stored?.subject).toBe(names.delayed);
    expect(stored?.header.get("Vqs-Delay")).toBe("60");
    expect((await q.receiveById(topic, "g", id)).status).toBe(409);
  });

  it("sets expiresAt from the retention header", async () => {
    const topic = uniqueName();
    await publishOk(topic, "x", { "vqs-retention-seconds": "60" });
    const [p] = await receiveParts(topic, "g");
    const ts = Date.parse(p!.headers.get("vqs-timestamp")!);
    expect(Date.parse(p!.headers.get("vqs-expires-at")!) - ts).toBe(60_000);
  });
});

describe("deduplication", () => {
  it("drops a second publish with the same key; receive by its ID answers 409 with the original", async () => {
    const topic = uniqueName();
    const original = await publishOk(topic, "first", { "vqs-idempotency-key": "order-1" });
    const duplicate = await publishOk(topic, "second", { "vqs-idempotency-key": "order-1" });
    expect(duplicate).not.toBe(original);
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(got.map((p) => p.body.toString())).toEqual(["first"]);
    const res = await q.receiveById(topic, "g2", duplicate);
    expect(res.status).toBe(409);
    const body = (await res.json()) as { originalMessageId: string; error: { code: string } };
    expect(body.originalMessageId).toBe(original);
    expect(body.error.code).toBe("message_duplicate");
  });

  it("scopes keys to their topic", async () => {
    const [t1, t2] = [uniqueName(), uniqueName()];
    await publishOk(t1, "a", { "vqs-idempotency-key": "k" });
    await publishOk(t2, "b", { "vqs-idempotency-key": "k" });
    expect(await receiveParts(t2, "g")).toHaveLength(1);
  });
});

describe("receive by ID", () => {
  it("leases the message for the group, which then never delivers it again once acknowledged", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "pick me", { "content-type": "text/plain" });
    await publishOk(topic, "other");
    const res = await q.receiveById(topic, "g", id);
    expect(res.status).toBe(200);
    const [p, ...rest] = await parts(res);
    expect(rest).toEqual([]);
    expect(p!.body.toString()).toBe("pick me");
    expect(p!.headers.get("vqs-message-id")).toBe(id);
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
    // While leased by ID: another by-ID answers 409, and the ordinary receive skips it.
    expect((await q.receiveById(topic, "g", id)).status).toBe(409);
    const ordinary = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(ordinary.map((x) => x.body.toString())).toEqual(["other"]);
    // Acknowledged by ID: 410 afterwards, and the ordinary receive never hands it out.
    expect((await q.ack(topic, "g", p!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    expect((await q.ack(topic, "g", p!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    const gone = await q.receiveById(topic, "g", id);
    expect(gone.status).toBe(410);
    expect(await errorCode(gone)).toBe("message_already_acknowledged");
    expect((await q.receive(topic, "g")).status).toBe(204);
    // Another group still sees it.
    expect((await q.receiveById(topic, "g2", id)).status).toBe(200);
  });

  it("counts deliveries exactly across a by-ID lease that ran out", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    const res = await q.receiveById(topic, "g", id, { "vqs-visibility-timeout-seconds": "1" });
    expect((await parts(res))[0]!.headers.get("vqs-delivery-count")).toBe("1");
    // The group's cursor meets it while the ID lease holds it: not delivered, not counted.
    expect((await q.receive(topic, "g")).status).toBe(204);
    const [again] = await receiveParts(topic, "g", { "vqs-wait-seconds": "10" });
    expect(again!.headers.get("vqs-delivery-count")).toBe("2");
  });

  it("answers 429 when the group is at Vqs-Max-Concurrency", async () => {
    const topic = uniqueName();
    await publishOk(topic, "held");
    const id = await publishOk(topic, "wanted");
    await receiveParts(topic, "g");
    const res = await q.receiveById(topic, "g", id, { "vqs-max-concurrency": "1" });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("1");
    expect((await q.receiveById(topic, "g", id, { "vqs-max-concurrency": "2" })).status).toBe(200);
  });

  it("answers NDJSON too", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    const res = await q.receiveById(topic, "g", id, { accept: "application/x-ndjson" });
    expect(res.status).toBe(200);
    const line = JSON.parse((await res.text()).trim()) as { messageId: string; body: string };
    expect(line.messageId).toBe(id);
    expect(Buffer.from(line.body, "base64").toString()).toBe("x");
  });

  it("answers 410 for a message the group acknowledged through its ordinary receive", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    const [p] = await receiveParts(topic, "g");
    await q.ack(topic, "g", p!.headers.get("vqs-receipt-handle")!);
    expect((await q.receiveById(topic, "g", id)).status).toBe(410);
  });

  it("answers 409 while the group's ordinary lease holds it", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    await receiveParts(topic, "g");
    expect((await q.receiveById(topic, "g", id)).status).toBe(409);
  });

  it("leases by ID a message whose ordinary lease ran out, making that lease's handle stale", async () => {
    const topic = uniqueName();
    const first = await publishOk(topic, "first");
    const id = await publishOk(topic, "second");
    await q.receiveById(topic, "g", first); // the group uses receive by ID from now on
    const [cursor] = await receiveParts(topic, "g", { "vqs-visibility-timeout-seconds": "1" });
    expect(cursor!.headers.get("vqs-message-id")).toBe(id);
    expect((await q.receiveById(topic, "g", id)).status).toBe(409); // its lease runs
    // Refused with nothing changed until the lease runs out; then leased by ID.
    let res = await q.receiveById(topic, "g", id);
    await expect
      .poll(
        async () => {
          if (res.status === 200) return 200;
          await res.text();
          res = await q.receiveById(topic, "g", id);
          return res.status;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(200);
    const [byId] = await parts(res);
    expect(byId!.headers.get("vqs-delivery-count")).toBe("2");
    // The ordinary receive does not hand it out meanwhile; the old handle changes nothing.
    expect((await q.receive(topic, "g")).status).toBe(204);
    const stale = await q.ack(topic, "g", cursor!.headers.get("vqs-receipt-handle")!);
    expect(stale.status).toBe(409);
    expect((await q.ack(topic, "g", byId!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    expect((await q.receiveById(topic, "g", id)).status).toBe(410);
    expect((await q.receive(topic, "g")).status).toBe(204);
  });

  it("answers 410 for a message acknowledged out of order through the ordinary receive", async () => {
    const topic = uniqueName();
    const first = await publishOk(topic, "first");
    const id = await publishOk(topic, "second");
    await q.receiveById(topic, "other", first); // "other" is not "g"; "g" needs the mark:
    await q.receiveById(topic, "g", await publishOk(topic, "third"));
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    const second = got.find((p) => p.headers.get("vqs-message-id") === id)!;
    // "first" stays leased (the ack floor stays below "second"); "second" is acknowledged.
    expect((await q.ack(topic, "g", second.headers.get("vqs-receipt-handle")!)).status).toBe(204);
    expect((await q.receiveById(topic, "g", id)).status).toBe(410);
  });

  it("answers 404 for IDs that never existed, malformed or forged", async () => {
    const topic = uniqueName();
    const id = await publishOk(topic, "x");
    for (const bad of [
      "m9999_AAAAAAAAAAAAAAAA",
      `${id.slice(0, -1)}${id.endsWith("A") ? "B" : "A"}`,
      "nope",
      "x1_AAAAAAAAAAA_AAAAAAAAAAAAAAAA",
    ]) {
      const res = await q.receiveById(topic, "g", bad);
      expect(res.status, bad).toBe(404);
      expect(await errorCode(res)).toBe("message_not_found");
    }
    expect((await q.receiveById(uniqueName(), "g", id)).status).toBe(404);
  });
});

describe("batch publish", () => {
  it("publishes each part with its own headers and answers one result per part, in order", async () => {
    const topic = uniqueName();
    const boundary = "b-123";
    const body =
      `--${boundary}\r\nContent-Type: text/plain\r\n\r\none\r\n` +
      `--${boundary}\r\nContent-Type: application/json\r\nVqs-Retention-Seconds: 5\r\n\r\n{"n":2}\r\n` +
      `--${boundary}\r\nContent-Type: text/plain\r\nVqs-Idempotency-Key: k1\r\n\r\nthree\r\n` +
      `--${boundary}--\r\n`;
    const res = await q.call("POST", `${topic}/batch`, {
      headers: { "content-type": `multipart/mixed; boundary=${boundary}` },
      body,
    });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: Array<Record<string, unknown>> };
    expect(results.map((r) => r.status)).toEqual(["sent", "failed", "sent"]);
    expect(results[1]).toMatchObject({ statusCode: 400, retryable: false });
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(got.map((p) => [p.body.toString(), p.headers.get("content-type")])).toEqual([
      ["one", "text/plain"],
      ["three", "text/plain"],
    ]);
  });

  it("fails each part without headers alone, at its place, and stores the others", async () => {
    const topic = uniqueName();
    const body =
      ["Content-Type: text/plain\r\n", "", "", "Content-Type: text/plain\r\n", ""]
        .map((h, i) => `--b-9\r\n${h}\r\npart-${i}\r\n`)
        .join("") + "--b-9--\r\n";
    const res = await q.call("POST", `${topic}/batch`, {
      headers: { "content-type": "multipart/mixed; boundary=b-9" },
      body,
    });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: Array<Record<string, unknown>> };
    expect(results.map((r) => r.status)).toEqual(["sent", "failed", "failed", "sent", "failed"]);
    expect(results[1]).toMatchObject({ statusCode: 400, retryable: false });
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(got.map((p) => p.body.toString()).sort()).toEqual(["part-0", "part-3"]);
  });

  it("refuses a batch of more than 100 parts, or a body cut short, storing none of it", async () => {
    const topic = uniqueName();
    const part = (i: number) => `--b-8\r\nContent-Type: text/plain\r\n\r\n${i}\r\n`;
    const many = Array.from({ length: 101 }, (_, i) => part(i)).join("") + "--b-8--\r\n";
    for (const body of [many, part(1) + part(2)]) {
      const res = await q.call("POST", `${topic}/batch`, {
        headers: { "content-type": "multipart/mixed; boundary=b-8" },
        body,
      });
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe("invalid_batch");
    }
    expect((await q.publish(topic, "after")).status).toBe(201);
    const got = await receiveParts(topic, "g", { "vqs-max-messages": "10" });
    expect(got.map((p) => p.body.toString())).toEqual(["after"]);
  });

  it("refuses a body that is not multipart/mixed", async () => {
    const res = await q.call("POST", `${uniqueName()}/batch`, {
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe("invalid_batch");
  });
});

describe("health and metrics", () => {
  it("answers liveness and readiness", async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  });

  it("exports Prometheus metrics: hot-path series by route template, per-group gauges by topic", async () => {
    const topic = uniqueName("metric-topic");
    await publishOk(topic, "one");
    await publishOk(topic, "two");
    await receiveParts(topic, "g");
    const text = await scrape(gw.metricsUrl);
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? NaN : Number(line.slice(series.length + 1));
    };
    expect(value("vqs_messages_published_total")).toBeGreaterThan(0);
    expect(value("vqs_nats_connected")).toBe(1);
    expect(text).toMatch(/vqs_messages_delivered_total\{redelivery="false"\} [1-9]/);
    expect(text).toContain('route="/api/v3/topic/:topic",status_code="201"');
    expect(
      value('vqs_jetstream_request_duration_seconds_count{operation="publish"}'),
    ).toBeGreaterThan(0);
    expect(value('vqs_jetstream_request_duration_seconds_count{operation="pull"}')).toBeGreaterThan(
      0,
    );
    // Topic names label only the per-group gauges, never a histogram or counter.
    const withTopic = text.split("\n").filter((l) => l.includes(topic));
    expect(withTopic.every((l) => l.startsWith("vqs_consumer_"))).toBe(true);
    const labels = `{queue_namespace="team_a/prj_1/production",topic="${topic}",consumer_group="g"}`;
    expect(value(`vqs_consumer_backlog_messages${labels}`)).toBe(1);
    expect(value(`vqs_consumer_in_flight_messages${labels}`)).toBe(1);
    const age = value(`vqs_consumer_oldest_message_age_seconds${labels}`);
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60);
    expect(value("vqs_consumer_metrics_truncated")).toBe(0);
    expect(text).toContain("process_cpu_seconds_total");
  });

  it("serves /metrics on its own port only: the API port answers 404 there, with a token or without", async () => {
    // The exposition's labels name every tenant's namespaces, topics and groups.
    const token = await issuer.token();
    const withAndWithout: Record<string, string>[] = [{}, { authorization: `Bearer ${token}` }];
    for (const headers of withAndWithout) {
      for (const path of ["/metrics", "/queues-proxy/metrics", "/metrics/"]) {
        const res = await fetch(`${gw.url}${path}`, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(404);
        expect(await errorCode(res)).toBe("route_not_found");
      }
    }
    expect(new URL(gw.metricsUrl).port).not.toBe(new URL(gw.url).port);
    const res = await fetch(gw.metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/^vqs_nats_connected 1$/m);
    // The API port's 404s above are timed there as unmatched requests.
    expect(text).toMatch(
      /^vqs_http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="404"\} [1-9]/m,
    );
    // The metrics port serves nothing else: not the API, not the probes.
    const elsewhere = new URL("/", gw.metricsUrl).href;
    const publish = await fetch(`${elsewhere}api/v3/topic/${uniqueName()}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: "y",
    });
    expect(publish.status).toBe(404);
    expect(await errorCode(publish)).toBe("route_not_found");
    expect((await fetch(`${elsewhere}healthz`)).status).toBe(404);
  });

  it("caps the per-group series and says so", async () => {
    const capped = await startGateway(nats.url, issuer, { config: { metricsMaxGroups: 1 } });
    try {
      const topic = uniqueName();
      await publishOk(topic, "x");
      await receiveParts(topic, "a");
      await receiveParts(topic, "b");
      const text = await scrape(capped.metricsUrl);
      expect(
        text.split("\n").filter((l) => l.startsWith("vqs_consumer_backlog_messages{")),
      ).toHaveLength(1);
      expect(text).toMatch(/^vqs_consumer_metrics_truncated 1$/m);
    } finally {
      await capped.close();
    }
  });
});

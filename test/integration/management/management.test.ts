// The management API (docs/api.md, "Management API") against a real nats-server: every endpoint and
// its errors, namespace scoping (a tenant sees only its own; an operator any, with
// Vqs-Namespace), peeking that leases nothing, seeks that move a group and turn its handles
// stale, purges and deletes that touch nothing else, and audit events. Pages over 2,500 topics:
// topic-pages.test.ts (main lane).
import { beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { startPushApp } from "../../helpers/push-app.js";
import { eventually, momentBetween } from "../../helpers/wait.js";

const lines: string[] = [];
const fx = useGateways(1, {
  env: { VQS_OPERATOR_TEAMS: "ops" },
  logger: createLogger("warn", { write: (line: string) => void lines.push(line) }),
});

let tokenA: string;
let tokenB: string;
let tokenOps: string;
const NS_A = "team_a/prj_1/production";

beforeAll(async () => {
  tokenA = await fx.issuer.token({ sub: "alice" });
  tokenB = await fx.issuer.token({ owner_id: "team_b", sub: "bob" });
  tokenOps = await fx.issuer.token({ owner_id: "ops", sub: "olga" });
});

interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

/** A management call: path under /api/v3, JSON in and out. */
async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const res = await fetch(`${fx.gateways[0]!.url}/api/v3/${path}`, {
    method,
    headers: {
      authorization: `Bearer ${o.token ?? tokenA}`,
      ...(o.body !== undefined ? { "content-type": "application/json" } : {}),
      ...o.headers,
    },
    ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

const q = (token = tokenA) => api(fx.gateways[0]!.url, token);

async function publish(topic: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await q().publish(topic, body, headers);
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

/** Receives up to `max` messages: bodies, IDs and handles. */
async function receive(topic: string, group: string, max = 10) {
  const res = await q().receive(topic, group, { "vqs-max-messages": String(max) });
  if (res.status === 204) return [];
  expect(res.status).toBe(200);
  return (await parts(res)).map((p) => ({
    body: p.body.toString(),
    id: p.headers.get("vqs-message-id")!,
    handle: p.headers.get("vqs-receipt-handle")!,
    deliveries: Number(p.headers.get("vqs-delivery-count")),
  }));
}

interface Group {
  name: string;
  backlog: number;
  inFlight: number;
  delayed: number;
  deliveries: number;
  redelivered: number;
  acknowledgedThrough: number;
  position: number;
  deadLettered: number;
  oldestUnacknowledgedAgeSeconds: number;
  settings: unknown;
  pushHealth: unknown;
}

async function groups(topic: string): Promise<Group[]> {
  const r = await call<{ consumerGroups: Group[] }>("GET", `topic/${topic}/consumers`);
  expect(r.status).toBe(200);
  return r.body.consumerGroups;
}

interface Peeked {
  messageId: string;
  preview: string;
  previewEncoding: string;
  payload?: string;
  size: number;
  contentType: string;
  deadLetter: unknown;
}

async function peek(topic: string, query = "") {
  const r = await call<{ messages: Peeked[]; next: string | null }>(
    "GET",
    `topic/${topic}/messages${query}`,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

function auditEvents(): Record<string, unknown>[] {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.audit === true);
}

describe("topics and groups", () => {
  it("shows a topic's figures, its groups' figures and the settings that apply", async () => {
    const topic = uniqueName("orders");
    const put = await q().call("PUT", `${topic}/consumer/billing/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deadLetter: { topic: `${topic}-dead`, maxDeliveries: 3 } }),
    });
    expect(put.status).toBe(200);
    await publish(topic, "one");
    await publish(topic, "two");
    await publish(topic, "three");
    await publish(topic, "later", { "vqs-delay-seconds": "600" });
    const [first] = await receive(topic, "billing", 1);
    expect(first!.body).toBe("one");
    await receive(topic, "audit", 10).then((ms) =>
      Promise.all(ms.map((m) => q().ack(topic, "audit", m.handle))),
    );

    const t = await call("GET", `topic/${topic}`);
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({
      name: topic,
      messages: 3,
      delayed: 1,
      consumerGroups: 2,
      settings: [
        { topic, consumerGroup: "billing", push: false, deadLetterTopic: `${topic}-dead` },
      ],
    });
    expect(t.body.bytes).toBeGreaterThan(0);
    expect(Date.parse(t.body.oldestMessageAt as string)).toBeLessThanOrEqual(
      Date.parse(t.body.newestMessageAt as string),
    );

    const [audit, billing] = await groups(topic);
    expect(audit).toMatchObject({
      name: "audit",
      backlog: 0,
      inFlight: 0,
      delayed: 1,
      deliveries: 3,
      acknowledgedThrough: expect.any(Number) as number,
      oldestUnacknowledgedAgeSeconds: 0,
      settings: null,
      pushHealth: null,
    });
    expect(billing).toMatchObject({
      name: "billing",
      backlog: 2,
      inFlight: 1,
      deliveries: 1,
      redelivered: 0,
      deadLettered: 0,
      settings: { deadLetter: { topic: `${topic}-dead`, maxDeliveries: 3 } },
    });
    expect(billing!.position).toBeLessThan(audit!.position);
  });

  it("answers 404 for a topic or group that is not there, and 400 for bad queries", async () => {
    const missing = uniqueName("missing");
    for (const [method, path] of [
      ["GET", `topic/${missing}`],
      ["GET", `topic/${missing}/consumers`],
      ["GET", `topic/${missing}/messages`],
      ["DELETE", `topic/${missing}`],
      ["POST", `topic/${missing}/purge`],
    ] as const) {
      const r = await call(method, path);
      expect([path, r.status, r.body]).toEqual([
        path,
        404,
        { error: expect.objectContaining({ code: "topic_not_found" }) as unknown },
      ]);
    }
    const topic = uniqueName("here");
    await publish(topic, "x");
    for (const [method, path, body] of [
      ["DELETE", `topic/${topic}/consumer/nobody`, undefined],
      ["POST", `topic/${topic}/consumer/nobody/seek`, { to: "earliest" }],
      ["DELETE", `topic/${missing}/consumer/nobody`, undefined],
    ] as const) {
      const r = await call(method, path, { body });
      expect([path, r.status, (r.body.error as { code: string }).code]).toEqual([
        path,
        404,
        "group_not_found",
      ]);
    }
    for (const path of [
      "topics?limit=0",
      "topics?limit=1001",
      "topics?limit=ten",
      "topics?limit=1&limit=2",
      "topics?cursor=a.b",
      `topic/${topic}/messages?limit=101`,
      `topic/${topic}/messages?payload=all`,
      `topic/${topic}/messages?after=not-an-id`,
    ]) {
      const r = await call("GET", path);
      expect([path, r.status, (r.body.error as { code: string }).code]).toEqual([
        path,
        400,
        "invalid_query",
      ]);
    }
    await receive(topic, "g");
    for (const body of [{}, { to: "yesterday" }, { to: 5 }, { to: "earliest", extra: 1 }, []]) {
      const s = await call("POST", `topic/${topic}/consumer/g/seek`, { body });
      expect([s.status, (s.body.error as { code: string }).code]).toEqual([
        400,
        "invalid_request_body",
      ]);
    }
    const bad = await call("GET", "topic/bad.name");
    expect([bad.status, (bad.body.error as { code: string }).code]).toEqual([
      400,
      "invalid_topic_name",
    ]);
  });
});

describe("peek", () => {
  it("reads messages oldest first, a page at a time, leasing nothing", async () => {
    const topic = uniqueName("peek");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(await publish(topic, `m${i}`, { "content-type": "text/plain" }));
    await publish(topic, Buffer.from([0xff, 0xfe, 0x00, 0x01]), {
      "content-type": "application/octet-stream",
    });
    const first = await peek(topic, "?limit=2");
    expect(first.messages.map((m) => m.preview)).toEqual(["m0", "m1"]);
    expect(first.messages[0]).toMatchObject({
      messageId: ids[0],
      previewEncoding: "utf8",
      size: 2,
      contentType: "text/plain",
      deadLetter: null,
    });
    expect(first.messages[0]!.payload).toBeUndefined();
    expect(first.next).toBe(ids[1]);
    const second = await peek(topic, `?limit=10&after=${first.next}&payload=full`);
    expect(second.next).toBeNull();
    expect(second.messages.map((m) => m.messageId).slice(0, 3)).toEqual(ids.slice(2));
    expect(second.messages[0]!.payload).toBe(Buffer.from("m2").toString("base64"));
    const binary = second.messages.at(-1)!;
    expect(binary).toMatchObject({ previewEncoding: "base64", preview: "//4AAQ==", size: 4 });

    // Peeking again and again counts no delivery: the first receive is delivery 1.
    await peek(topic);
    const got = await receive(topic, "workers", 10);
    expect(got.map((m) => m.deliveries)).toEqual([1, 1, 1, 1, 1, 1]);
    await peek(topic);
    const [workers] = await groups(topic);
    expect(workers).toMatchObject({ deliveries: 6, redelivered: 0, inFlight: 6 });
  });

  it("starts at a time when `after` is one", async () => {
    const topic = uniqueName("peek-time");
    await publish(topic, "before");
    const from = await momentBetween();
    await publish(topic, "after-1");
    await publish(topic, "after-2");
    const page = await peek(topic, `?after=${from}`);
    expect(page.messages.map((m) => m.preview)).toEqual(["after-1", "after-2"]);
  });
});

describe("seek", () => {
  it("moves a group to the earliest message, to now, or to a time; old handles answer 409", async () => {
    const topic = uniqueName("seek");
    await publish(topic, "a");
    await publish(topic, "b");
    const between = await momentBetween();
    await publish(topic, "c");
    const first = await receive(topic, "g");
    expect(first.map((m) => m.body)).toEqual(["a", "b", "c"]);
    expect((await q().ack(topic, "g", first[0]!.handle)).status).toBe(204);

    const s = await call("POST", `topic/${topic}/consumer/g/seek`, { body: { to: "earliest" } });
    expect(s).toEqual({ status: 200, body: { to: "earliest" } });
    const stale = await q().ack(topic, "g", first[1]!.handle);
    expect([stale.status, await errorCode(stale)]).toEqual([409, "receipt_handle_stale"]);
    const again = await receive(topic, "g");
    expect(again.map((m) => m.body)).toEqual(["a", "b", "c"]);
    expect(again.map((m) => m.deliveries)).toEqual([1, 1, 1]);
    for (const m of again) expect((await q().ack(topic, "g", m.handle)).status).toBe(204);

    const t = await call("POST", `topic/${topic}/consumer/g/seek`, { body: { to: between } });
    expect(t).toEqual({ status: 200, body: { to: between } });
    expect((await receive(topic, "g")).map((m) => m.body)).toEqual(["c"]);

    const l = await call("POST", `topic/${topic}/consumer/g/seek`, { body: { to: "latest" } });
    expect(l.status).toBe(200);
    expect(await receive(topic, "g")).toEqual([]);
    await publish(topic, "d");
    expect((await receive(topic, "g")).map((m) => m.body)).toEqual(["d"]);
    // The group keeps its figures' meaning: nothing left behind it.
    const [g] = await groups(topic);
    expect(g).toMatchObject({ name: "g", backlog: 0, inFlight: 1 });
  });
});

describe("seek of a pushed group", () => {
  it("pushes again from the new position", async () => {
    const app = await startPushApp(fx.gateways[0]!.url, tokenA);
    try {
      const topic = uniqueName("pushed");
      const seen: string[] = [];
      const url = app.fetchRoute(topic, {
        handler: (payload) => void seen.push(String(payload)),
      });
      const put = await q().call("PUT", `${topic}/consumer/workers/settings`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ push: { url } }),
      });
      expect(put.status).toBe(200);
      for (const n of ["1", "2"])
        await publish(topic, JSON.stringify(n), { "content-type": "application/json" });
      await until(() => seen.length >= 2);
      // Pushes run side by side (maxConcurrency), so they may arrive in either order.
      expect([...seen].sort()).toEqual(["1", "2"]);
      const s = await call("POST", `topic/${topic}/consumer/workers/seek`, {
        body: { to: "earliest" },
      });
      expect(s.status).toBe(200);
      // Within a moment, not at the next periodic look (every 10 s).
      await until(() => seen.length >= 4, 5_000);
      expect(seen.slice(2).sort()).toEqual(["1", "2"]);
      const [g] = await groups(topic);
      expect(g).toMatchObject({ name: "workers", backlog: 0 });
    } finally {
      await app.close();
    }
  });
});

async function until(ok: () => boolean, ms = 15_000): Promise<void> {
  await eventually(ok, ms);
}

describe("purge and delete", () => {
  it("purges one topic's messages; its groups and settings stay, other topics are untouched", async () => {
    const topic = uniqueName("purge");
    const other = uniqueName("keep");
    const put = await q().call("PUT", `${topic}/consumer/g/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deadLetter: { topic: `${topic}-dead`, maxDeliveries: 2 } }),
    });
    expect(put.status).toBe(200);
    await publish(topic, "1");
    await publish(topic, "2", { "vqs-idempotency-key": "k1" });
    await publish(topic, "3", { "vqs-delay-seconds": "600" });
    await publish(other, "kept");
    const [leased] = await receive(topic, "g", 1);
    const r = await call("POST", `topic/${topic}/purge`);
    expect(r).toEqual({ status: 200, body: { purged: 3 } });
    expect(await call("GET", `topic/${topic}`)).toMatchObject({
      status: 200,
      body: { messages: 0, delayed: 0, consumerGroups: 1, settings: [{ consumerGroup: "g" }] },
    });
    // Acknowledging a purged message is harmless, and brings nothing back.
    const ack = await q().ack(topic, "g", leased!.handle);
    expect([204, 409, 410]).toContain(ack.status);
    expect(await receive(topic, "g")).toEqual([]);
    // The idempotency key went with its message: the same key stores a new one.
    await publish(topic, "2 again", { "vqs-idempotency-key": "k1" });
    expect((await receive(topic, "g")).map((m) => m.body)).toEqual(["2 again"]);
    expect((await receive(other, "g")).map((m) => m.body)).toEqual(["kept"]);
  });

  it("deletes a topic with its groups and settings; a later publish makes a new one", async () => {
    const topic = uniqueName("gone");
    const other = uniqueName("stays");
    await q().call("PUT", `${topic}/consumer/g/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deadLetter: { topic: `${topic}-dead`, maxDeliveries: 2 } }),
    });
    await publish(topic, "old");
    await publish(other, "kept");
    const [leased] = await receive(topic, "g");
    const d = await call("DELETE", `topic/${topic}`);
    expect(d.status).toBe(204);
    expect((await call("GET", `topic/${topic}`)).status).toBe(404);
    const settings = await q().call("GET", `${topic}/consumer/g/settings`);
    expect([settings.status, await errorCode(settings)]).toEqual([404, "settings_not_found"]);
    const ack = await q().ack(topic, "g", leased!.handle);
    expect(ack.status).toBeGreaterThanOrEqual(400);
    await publish(topic, "new");
    const renewed = await receive(topic, "g");
    expect(renewed.map((m) => m.body)).toEqual(["new"]);
    // The old handle names sequence 1 of group g, as the new lease does: it is stale, and the
    // new message stays leased (its own handle still settles it).
    const old = await q().ack(topic, "g", leased!.handle);
    expect([old.status, await errorCode(old)]).toEqual([409, "receipt_handle_stale"]);
    expect((await q().ack(topic, "g", renewed[0]!.handle)).status).toBe(204);
    expect((await receive(other, "g")).map((m) => m.body)).toEqual(["kept"]);
    expect((await call("DELETE", `topic/${topic}`)).status).toBe(204);
    expect((await call("DELETE", `topic/${topic}`)).status).toBe(404);
  });

  it("deletes a group: its handles answer 409, other groups keep their place", async () => {
    const topic = uniqueName("group");
    await publish(topic, "1");
    await publish(topic, "2");
    const [mine] = await receive(topic, "doomed", 1);
    const [theirs] = await receive(topic, "other", 1);
    expect((await call("DELETE", `topic/${topic}/consumer/doomed`)).status).toBe(204);
    const stale = await q().ack(topic, "doomed", mine!.handle);
    expect([stale.status, await errorCode(stale)]).toEqual([409, "receipt_handle_stale"]);
    expect((await groups(topic)).map((g) => g.name)).toEqual(["other"]);
    expect((await q().ack(topic, "other", theirs!.handle)).status).toBe(204);
    expect((await receive(topic, "other")).map((m) => m.body)).toEqual(["2"]);
    // The name can be used again: a new group, from the oldest message.
    expect((await receive(topic, "doomed")).map((m) => m.body)).toEqual(["1", "2"]);
  });
});

describe("namespaces and operators", () => {
  it("keeps every tenant to its own namespace", async () => {
    const topic = uniqueName("private");
    await publish(topic, "secret");
    await receive(topic, "g");
    const b = (method: string, path: string, body?: unknown) =>
      call(method, path, { token: tokenB, body });
    const listed = await b("GET", "topics?limit=1000");
    expect(listed.status).toBe(200);
    expect((listed.body.topics as { name: string }[]).map((t) => t.name)).not.toContain(topic);
    for (const [method, path, body] of [
      ["GET", `topic/${topic}`],
      ["GET", `topic/${topic}/consumers`],
      ["GET", `topic/${topic}/messages`],
      ["POST", `topic/${topic}/purge`],
      ["DELETE", `topic/${topic}`],
      ["DELETE", `topic/${topic}/consumer/g`],
      ["POST", `topic/${topic}/consumer/g/seek`, { to: "latest" }],
    ] as const) {
      const r = await b(method, path, body);
      expect([path, r.status]).toEqual([path, 404]);
    }
    const asOther = await call("GET", "topics", {
      token: tokenB,
      headers: { "vqs-namespace": NS_A },
    });
    expect([asOther.status, (asOther.body.error as { code: string }).code]).toEqual([
      403,
      "operator_only",
    ]);
    const ns = await call("GET", "namespaces", { token: tokenB });
    expect([ns.status, (ns.body.error as { code: string }).code]).toEqual([403, "operator_only"]);
    // Nothing of A's changed.
    expect(await call("GET", `topic/${topic}`)).toMatchObject({
      status: 200,
      body: { messages: 1, consumerGroups: 1 },
    });
  });

  it("lets an operator list namespaces and act in any of them", async () => {
    const topic = uniqueName("ops");
    await publish(topic, "x");
    expect((await q(tokenB).publish(uniqueName("b"), "y")).status).toBe(201);
    const ns = await call<{ namespaces: { label: string; team: string; topics: number }[] }>(
      "GET",
      "namespaces",
      { token: tokenOps },
    );
    expect(ns.status).toBe(200);
    const labels = ns.body.namespaces.map((n) => n.label);
    expect(labels).toContain(NS_A);
    expect(labels).toContain("team_b/prj_1/production");
    expect(ns.body.namespaces.find((n) => n.label === NS_A)!.topics).toBeGreaterThan(0);

    const inA = { token: tokenOps, headers: { "vqs-namespace": NS_A } };
    const t = await call("GET", `topic/${topic}`, inA);
    expect(t).toMatchObject({ status: 200, body: { name: topic, messages: 1 } });
    expect(await call("POST", `topic/${topic}/purge`, inA)).toEqual({
      status: 200,
      body: { purged: 1 },
    });
    // The operator's own namespace is another.
    expect((await call("GET", `topic/${topic}`, { token: tokenOps })).status).toBe(404);
    for (const label of ["team_a/prj_1", "team_a//production", "a/b/c/d/e", "team_a/%zz/x"]) {
      const r = await call("GET", "topics", {
        token: tokenOps,
        headers: { "vqs-namespace": label },
      });
      expect([label, r.status, (r.body.error as { code: string }).code]).toEqual([
        label,
        400,
        "invalid_namespace",
      ]);
    }
    const both = await call("GET", "topics", {
      token: tokenOps,
      headers: { "vqs-namespace": NS_A, "vqs-deployment-id": "d1" },
    });
    expect([both.status, (both.body.error as { code: string }).code]).toEqual([
      400,
      "invalid_namespace",
    ]);
  });

  it("records destructive calls as audit events, failed ones too", async () => {
    const topic = uniqueName("audited");
    await publish(topic, "x");
    await receive(topic, "g");
    lines.length = 0;
    expect(
      (await call("POST", `topic/${topic}/consumer/g/seek`, { body: { to: "latest" } })).status,
    ).toBe(200);
    expect((await call("POST", `topic/${topic}/purge`)).status).toBe(200);
    expect(
      (
        await call("POST", `topic/${topic}/purge`, {
          token: tokenOps,
          headers: { "vqs-namespace": NS_A },
        })
      ).status,
    ).toBe(200);
    expect((await call("DELETE", `topic/${topic}/consumer/g`)).status).toBe(204);
    expect((await call("DELETE", `topic/${topic}`)).status).toBe(204);
    expect((await call("DELETE", `topic/${topic}`)).status).toBe(404);
    expect((await call("POST", `topic/${topic}-dead/redrive`, { body: {} })).status).toBe(404);
    // Reads are not audited.
    await call("GET", `topic/${topic}`);
    const events = auditEvents();
    expect(events.map((e) => [e.action, e.outcome])).toEqual([
      ["seek_group", "done"],
      ["purge_topic", "done"],
      ["purge_topic", "done"],
      ["delete_group", "done"],
      ["delete_topic", "done"],
      ["delete_topic", "topic_not_found"],
      ["redrive", "topic_not_found"],
    ]);
    expect(events[0]).toMatchObject({
      namespace: NS_A,
      topic,
      group: "g",
      to: "latest",
      who: { team: "team_a", subject: "alice", operator: false },
    });
    expect(events[2]).toMatchObject({
      namespace: NS_A,
      who: { team: "ops", subject: "olga", operator: true },
    });
    expect(events[6]).toMatchObject({ topic: `${topic}-dead`, target: null });
    for (const e of events) expect(typeof e.requestId).toBe("string");
  });

  it("records settings PUT and DELETE as audit events, refused ones too", async () => {
    const topic = uniqueName("audited-settings");
    const path = `${topic}/consumer/g/settings`;
    const json = { "content-type": "application/json" };
    lines.length = 0;
    const body = JSON.stringify({ deadLetter: { topic: `${topic}-dead`, maxDeliveries: 3 } });
    expect((await q().call("PUT", path, { headers: json, body })).status).toBe(200);
    const bad = JSON.stringify({ visibilityTimeoutSeconds: -1 });
    expect((await q().call("PUT", path, { headers: json, body: bad })).status).toBe(400);
    // Reads are not audited.
    expect((await q().call("GET", path)).status).toBe(200);
    expect((await q().call("DELETE", path)).status).toBe(204);
    expect((await q().call("DELETE", path)).status).toBe(404);
    const events = auditEvents();
    expect(events.map((e) => [e.action, e.outcome])).toEqual([
      ["put_settings", "done"],
      ["put_settings", "invalid_settings"],
      ["delete_settings", "done"],
      ["delete_settings", "settings_not_found"],
    ]);
    for (const e of events) {
      expect(e).toMatchObject({
        namespace: NS_A,
        topic,
        group: "g",
        who: { team: "team_a", subject: "alice", operator: false },
      });
    }
  });
});

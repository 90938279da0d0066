// Dead letters end to end through JetStream: a message delivered `maxDeliveries` times without an
// acknowledgement goes to the group's dead-letter topic on its next delivery (by receive, receive
// by ID or push), carrying where it came from on the wire, once per message and group however
// the gateways race or fail. Redrive moves dead letters back. The rules themselves (counts, what
// moves when, origin and time to live, deployments, redrive's order, limit and races) run on the
// twins in milliseconds: test/unit/queue/dead-letter-rules.test.ts. Here: one case per
// operation, two gateways racing, a fault halfway, and the HTTP refusals.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startNatsProxy, type NatsProxy } from "../../helpers/processes/nats-proxy.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";

const fx = useGateways(2);
let token: string;
let app: PushApp;
let proxy: NatsProxy;
let proxied: TestGateway;

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
  proxy = await startNatsProxy(fx.nats.port);
  proxied = await startGateway(proxy.url, fx.issuer, {
    config: { requestTimeoutMs: 1000 },
  });
});

afterAll(async () => {
  await proxied?.close();
  await proxy?.close();
  await app?.close();
});

const q = (i = 0) => api(fx.gateways[i]!.url, token);

const NS = makeNamespace("team_a", "prj_1", "production", null);

async function settings(
  topic: string,
  group: string,
  body: { deadLetter: { topic: string; maxDeliveries: number } } & Record<string, unknown>,
  ns = NS,
  client = q(),
): Promise<void> {
  const res = await client.call("PUT", `${topic}/consumer/${group}/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  // Every gateway follows the change.
  for (const gw of [...fx.gateways, proxied]) {
    await expect
      .poll(() => gw.gateway.settings.effective(ns, topic, group)?.deadLetter?.maxDeliveries)
      .toBe(body.deadLetter.maxDeliveries);
  }
}

/** Ends the leases of a receive's messages at once, unacknowledged (as running out would). */
async function release(client: ReturnType<typeof api>, topic: string, res: Response) {
  const got = await parts(res);
  for (const p of got) {
    const handle = p.headers.get("vqs-receipt-handle")!;
    expect((await client.extend(topic, "workers", handle, 0)).status).toBe(200);
  }
  return got;
}

async function publish(topic: string, body: string, headers: Record<string, string> = {}) {
  const res = await q().publish(topic, body, headers);
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

/** Everything a fresh group sees in a topic: bodies and part headers. */
async function contents(topic: string, gw = 0): Promise<{ body: string; h: Headers }[]> {
  const group = uniqueName("look");
  const out: { body: string; h: Headers }[] = [];
  for (let empty = 0; empty < 2;) {
    const res = await q(gw).receive(topic, group, { "vqs-max-messages": "10" });
    if (res.status !== 200) {
      await res.text();
      empty++;
      continue;
    }
    for (const p of await parts(res)) out.push({ body: p.body.toString(), h: p.headers });
  }
  return out;
}

describe("dead letters", () => {
  it("moves a polled message released unacknowledged maxDeliveries times, with its origin on the wire", async () => {
    const topic = uniqueName("poison");
    const dlq = `${topic}-dead`;
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 2 } });
    const id = await publish(topic, "poison", {
      "content-type": "text/plain",
      "vqs-retention-seconds": "3600",
    });
    for (const count of ["1", "2"]) {
      const [p] = await release(q(), topic, await q().receive(topic, "workers"));
      expect(p!.headers.get("vqs-delivery-count")).toBe(count);
    }
    // The third delivery would be one too many: it goes to the dead-letter topic instead.
    const third = await q().receive(topic, "workers");
    expect(third.status).toBe(204);
    const [copy] = await contents(dlq);
    expect(copy!.body).toBe("poison");
    expect(copy!.h.get("content-type")).toBe("text/plain");
    expect(copy!.h.get("vqs-dead-letter-topic")).toBe(topic);
    expect(copy!.h.get("vqs-dead-letter-consumer-group")).toBe("workers");
    expect(copy!.h.get("vqs-dead-letter-message-id")).toBe(id);
    expect(copy!.h.get("vqs-dead-letter-delivery-count")).toBe("3");
    // The remaining time to live is kept (an hour less a few seconds).
    const left = Date.parse(copy!.h.get("vqs-expires-at")!) - Date.now();
    expect(left).toBeGreaterThan(3500_000);
    expect(left).toBeLessThanOrEqual(3600_000);
    // NDJSON consumers get the origin as an object.
    const nd = await q().receive(dlq, uniqueName("nd"), { accept: "application/x-ndjson" });
    const line = JSON.parse((await nd.text()).trim()) as { deadLetter: unknown };
    expect(line.deadLetter).toEqual({
      topic,
      consumerGroup: "workers",
      messageId: id,
      deliveryCount: 3,
    });
    // Another group of the source topic still has it.
    const other = await q().receive(topic, "auditors");
    expect((await parts(other)).map((p) => p.body.toString())).toEqual(["poison"]);
    // Receive by ID of the dead-lettered message in its group: it is gone from the group.
    expect((await q().receiveById(topic, "workers", id)).status).toBe(410);
  });

  it("counts deliveries by ID, and answers 410 message_dead_lettered for the one too many", async () => {
    const topic = uniqueName("byid");
    const dlq = `${topic}-dead`;
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 2 } });
    const id = await publish(topic, "by id");
    for (const count of ["1", "2"]) {
      const res = await q().receiveById(topic, "workers", id);
      expect(res.status).toBe(200);
      expect((await release(q(), topic, res))[0]!.headers.get("vqs-delivery-count")).toBe(count);
    }
    const third = await q().receiveById(topic, "workers", id);
    expect(third.status).toBe(410);
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe(
      "message_dead_lettered",
    );
    expect((await contents(dlq)).map((c) => c.h.get("vqs-dead-letter-delivery-count"))).toEqual([
      "3",
    ]);
    expect((await q().receive(topic, "workers")).status).toBe(204);
  });

  it("moves a pushed message whose handler always fails after maxDeliveries pushes", async () => {
    const topic = uniqueName("pushed");
    const dlq = `${topic}-dead`;
    const url = app.hookRoute(topic, 500);
    await settings(topic, "workers", {
      push: { url, autoAck: true },
      retry: { afterSeconds: 0 },
      deadLetter: { topic: dlq, maxDeliveries: 3 },
    });
    await publish(topic, "always fails");
    await expect.poll(() => contents(dlq).then((c) => c.length), { timeout: 15_000 }).toBe(1);
    const [copy] = await contents(dlq);
    expect(copy!.h.get("vqs-dead-letter-delivery-count")).toBe("4");
    // The fourth delivery was the move, not a push (no push after it: dead-letter-rules.test.ts).
    expect(app.requests.filter((r) => r.path.endsWith(`/${topic}`))).toHaveLength(3);
  });

  it("stores one copy when two gateways race to move the same message", async () => {
    const topic = uniqueName("race");
    const dlq = `${topic}-dead`;
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
    for (let i = 0; i < 20; i++) await publish(topic, `m${i}`);
    // Every message delivered once (count 1), its lease ended unacknowledged.
    for (let got = 0; got < 20;) {
      const res = await q().receive(topic, "workers", { "vqs-max-messages": "10" });
      got += (await release(q(), topic, res)).length;
    }
    // Both gateways receive at once: each redelivery is moved by one of them.
    await Promise.all(
      [0, 1, 0, 1, 0, 1].map((gw) =>
        q(gw)
          .receive(topic, "workers", { "vqs-max-messages": "10" })
          .then((r) => r.text()),
      ),
    );
    await expect
      .poll(() => contents(dlq).then((c) => c.length), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(20);
    const copies = await contents(dlq);
    expect(copies.map((c) => c.body).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i}`).sort(),
    );
  });

  it("stores one copy when the gateway fails between the copy and the acknowledgement", async () => {
    const topic = uniqueName("halfway");
    const dlq = `${topic}-dead`;
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
    const pq = api(proxied.url, token);
    await publish(topic, "once");
    expect((await release(pq, topic, await pq.receive(topic, "workers"))).length).toBe(1);
    // The acknowledgement in the source group never reaches the server (its gateway dies as it
    // sends it, in effect): the copy is stored, the message comes back and is moved again.
    const lost = proxy.loseRequest((subject, headers) => {
      void headers;
      return subject.startsWith("$JS.ACK.");
    });
    expect((await pq.receive(topic, "workers")).status).toBe(204);
    await lost;
    await sleep(6000); // real time at the server: it comes back after the 5 s retry lease
    expect((await pq.receive(topic, "workers")).status).toBe(204);
    const copies = await contents(dlq);
    expect(copies.map((c) => c.body)).toEqual(["once"]);
    expect((await q().receive(topic, "workers")).status).toBe(204);
  });

  it("refuses a dead-letter topic that is not a topic name of the group's own namespace", async () => {
    const topic = uniqueName("ns");
    for (const bad of ["other/ns", "team_b:orders", "", "x".repeat(256), topic]) {
      const res = await q().call("PUT", `${topic}/consumer/workers/settings`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ deadLetter: { topic: bad, maxDeliveries: 1 } }),
      });
      expect(res.status, bad).toBe(400);
    }
    // With a deployment ID, the dead-letter topic is that deployment's own.
    // (That a deployment's dead letters stay in its namespace: dead-letter-rules.test.ts; here
    // that the header selects that namespace end to end.)
    const dq = api(fx.gateways[0]!.url, token, { "vqs-deployment-id": "dpl_1" });
    const dplNs = makeNamespace("team_a", "prj_1", "production", "dpl_1");
    await settings(
      topic,
      "workers",
      { deadLetter: { topic: `${topic}-dead`, maxDeliveries: 1 } },
      dplNs,
      dq,
    );
    await dq.publish(topic, "deployment's");
    await release(dq, topic, await dq.receive(topic, "workers"));
    expect((await dq.receive(topic, "workers")).status).toBe(204);
    const inDeployment = await dq.receive(`${topic}-dead`, "look");
    expect((await parts(inDeployment)).map((p) => p.body.toString())).toEqual(["deployment's"]);
    expect((await q().receive(`${topic}-dead`, "look")).status).toBe(204);
  });
});

describe("redrive", () => {
  async function deadLetter(topic: string, n: number): Promise<string> {
    const dlq = `${topic}-dead`;
    await settings(topic, "workers", { deadLetter: { topic: dlq, maxDeliveries: 1 } });
    for (let i = 0; i < n; i++) await publish(topic, `m${i}`);
    for (let got = 0; got < n;) {
      const res = await q().receive(topic, "workers", { "vqs-max-messages": "10" });
      got += (await release(q(), topic, res)).length;
    }
    while ((await q().receive(topic, "workers", { "vqs-max-messages": "10" })).status !== 204);
    return dlq;
  }

  const redrive = (dlq: string, body: unknown) =>
    q().call("POST", `${dlq}/redrive`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("moves dead letters back to their source, oldest first, each once, from delivery 1", async () => {
    const topic = uniqueName("rd");
    const dlq = await deadLetter(topic, 5);
    const part = await redrive(dlq, { limit: 2 });
    expect(await part.json()).toEqual({ moved: 2, remaining: 3 });
    // Interrupted there, resumed: the rest, none twice.
    const rest = await redrive(dlq, {});
    expect(await rest.json()).toEqual({ moved: 3, remaining: 0 });
    expect(await (await redrive(dlq, {})).json()).toEqual({ moved: 0, remaining: 0 });
    // The group that dead-lettered them gets them again, as new messages, oldest first.
    const back: string[] = [];
    for (;;) {
      const res = await q().receive(topic, "workers", { "vqs-max-messages": "10" });
      if (res.status === 204) break;
      for (const p of await parts(res)) {
        expect(p.headers.get("vqs-delivery-count")).toBe("1");
        expect(p.headers.get("vqs-dead-letter-topic")).toBeNull();
        back.push(p.body.toString());
      }
    }
    expect(back).toEqual(["m0", "m1", "m2", "m3", "m4"]);
  });

  it("moves to a given topic", async () => {
    const topic = uniqueName("rd2");
    const dlq = await deadLetter(topic, 3);
    const target = `${topic}-again`;
    expect(await (await redrive(dlq, { topic: target })).json()).toEqual({
      moved: 3,
      remaining: 0,
    });
    expect((await contents(target)).map((c) => c.body)).toEqual(["m0", "m1", "m2"]);
  });

  it("answers bad requests with their 4xx code", async () => {
    const topic = uniqueName("rd3");
    const dlq = await deadLetter(topic, 1);
    for (const [body, status] of [
      [{ limit: 0 }, 400],
      [{ limit: 1.5 }, 400],
      [{ limit: 10_001 }, 400],
      [{ topic: "bad name" }, 400],
      [{ topic: dlq }, 400],
      [{ other: 1 }, 400],
      [[], 400],
    ] as const) {
      expect((await redrive(dlq, body)).status, JSON.stringify(body)).toBe(status);
    }
    expect((await redrive(uniqueName("nothing"), {})).status).toBe(404);
    expect((await q().call("POST", `${dlq}/redrive`, { body: "{not json" })).status).toBe(400);
    expect(await (await redrive(dlq, {})).json()).toEqual({ moved: 1, remaining: 0 });
  });
});

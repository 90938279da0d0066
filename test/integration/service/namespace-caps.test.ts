// Caps per namespace on one gateway: requests in flight (429 too_many_requests_in_flight), waiting
// receives (429 too_many_waiters) and pushes in flight (a namespace whose endpoint never answers
// holds no more than its share), each with Retry-After where a client is refused, counted in
// vqs_tenant_limit_refusals_total and vqs_namespaces_at_cap, while another namespace is served;
// a push frees its slot at its message's acknowledgement, before its endpoint answers, and a
// message held at the cap stays leased (JetStream's `+WPI`). The push scheduler's rules (shares,
// the order a freed slot is given in, holdbacks, a seek's held messages) are held on the twins in
// test/unit/queue/push-scheduler-rules.test.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { BufferTransport, QueueClient } from "@vercel/queue";
import { afterAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { eventually, settingsApi } from "../../helpers/settings.js";
import { scrape } from "../../helpers/metrics.js";

const fx = useGateways(1, {
  env: {
    VQS_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE: "4",
    VQS_MAX_WAITERS_PER_NAMESPACE: "2",
  },
  config: { maxPushesInFlightPerNamespace: 2 },
});

const held: ServerResponse[] = [];
let endpoint: Server | null = null;
afterAll(async () => {
  for (const r of held) r.destroy();
  await new Promise((r) => endpoint?.close(r) ?? r(undefined));
});

async function metric(name: string, labels: string): Promise<number> {
  const text = await scrape(fx.gateways[0]!.metricsUrl);
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(" ").pop()) : 0;
}

const tokenOf = (project: string) => fx.issuer.token({ project_id: project });

/** A group's figures as the management API reads them from the store. */
interface Figures {
  readonly name: string;
  readonly backlog: number;
  readonly inFlight: number;
  readonly deliveries: number;
  readonly redelivered: number;
}

async function figures(token: string, topic: string): Promise<Figures[]> {
  const res = await fetch(`${fx.gateways[0]!.url}/api/v3/topic/${topic}/consumers`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { consumerGroups: Figures[] }).consumerGroups;
}

/** The group's figures, once it has nothing left to deliver or acknowledge. */
async function settled(token: string, topic: string, group: string): Promise<Figures | null> {
  let last: Figures | null = null;
  const done = await eventually(async () => {
    last = (await figures(token, topic)).find((g) => g.name === group) ?? null;
    return last !== null && last.backlog === 0 && last.inFlight === 0;
  }, 15_000);
  return done ? last : null;
}

describe("caps per namespace on a gateway", () => {
  it("refuses a waiting receive past the waiter cap with 429; other namespaces wait as usual", async () => {
    const url = fx.gateways[0]!.url;
    const a = api(url, await tokenOf("prj_waiters_a"));
    const b = api(url, await tokenOf("prj_waiters_b"));
    const topic = uniqueName();
    await a.publish(topic, "make the topic");
    await b.publish(topic, "make the topic");
    // Use up what is there, so that receives wait.
    await parts(await a.receive(topic, "g"));
    await parts(await b.receive(topic, "g"));
    const wait = { "vqs-wait-seconds": "3" };
    // A's two waiters (its cap) and one of B's, all waiting.
    const waiting = [a.receive(topic, "g", wait), a.receive(topic, "g", wait)];
    const bWaiting = b.receive(topic, "g", wait);
    await expect.poll(() => fx.gateways[0]!.gateway.queue.waitingReceives).toBe(3);
    const refused = await a.receive(topic, "g", wait);
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("too_many_waiters");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await metric("vqs_namespaces_at_cap", 'cap="waiters"')).toBe(1);
    // A receive that does not wait is served; so is another namespace's waiting receive.
    expect((await a.receive(topic, "g")).status).toBe(204);
    await b.publish(topic, "for b");
    const got = await parts(await bWaiting);
    expect(got.map((p) => p.body.toString())).toEqual(["for b"]);
    for (const r of await Promise.all(waiting)) expect(r.status).toBe(204);
    expect(await metric("vqs_tenant_limit_refusals_total", 'code="too_many_waiters"')).toBe(1);
  });

  it("refuses a request past the in-flight cap with 429 until one ends; other namespaces go on", async () => {
    const url = fx.gateways[0]!.url;
    const a = api(url, await tokenOf("prj_inflight_a"));
    const b = api(url, await tokenOf("prj_inflight_b"));
    const [t1, t2] = [uniqueName(), uniqueName()];
    await a.publish(t1, "x");
    await a.publish(t2, "x");
    await parts(await a.receive(t1, "g"));
    await parts(await a.receive(t2, "g"));
    // Four requests in flight (the cap): two waiting receives (the waiter cap) and two publishes
    // whose bodies trickle in.
    const wait = { "vqs-wait-seconds": "3" };
    const longPolls = [a.receive(t1, "g", wait), a.receive(t2, "g", wait)];
    const trickles = [
      trickle(url, await tokenOf("prj_inflight_a"), t1),
      trickle(url, await tokenOf("prj_inflight_a"), t2),
    ];
    await expect
      .poll(() => metric("vqs_namespaces_at_cap", 'cap="requests_in_flight"'), { timeout: 10_000 })
      .toBe(1);
    const refused = await a.publish(t1, "one too many");
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("too_many_requests_in_flight");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another namespace is not refused.
    expect((await b.publish(t1, "b")).status).toBe(201);
    for (const t of trickles) t.finish();
    expect((await Promise.all(trickles.map((t) => t.done))).every((s) => s === 201)).toBe(true);
    await Promise.all(longPolls);
    expect((await a.publish(t1, "room again")).status).toBe(201);
    expect(
      await metric("vqs_tenant_limit_refusals_total", 'code="too_many_requests_in_flight"'),
    ).toBeGreaterThanOrEqual(1);
  });

  it("holds the waiter and in-flight caps for a tenant's deployments together, management routes counted", async () => {
    const url = fx.gateways[0]!.url;
    const token = await tokenOf("prj_tenant_spread");
    const at = (d: string) => api(url, token, { "vqs-deployment-id": d });
    const topic = uniqueName();
    for (const d of ["dpl_1", "dpl_2", "dpl_3"]) {
      await at(d).publish(topic, "make the topic");
      await parts(await at(d).receive(topic, "g"));
    }
    const wait = { "vqs-wait-seconds": "5" };
    // One waiter in each of two deployments: the tenant's waiter cap (2), each namespace under it.
    const waiting = [at("dpl_1").receive(topic, "g", wait), at("dpl_2").receive(topic, "g", wait)];
    const trickles: ReturnType<typeof trickle>[] = [];
    try {
      await expect
        .poll(() => metric("vqs_namespaces_at_cap", 'cap="waiters"'), { timeout: 10_000 })
        .toBe(2);
      const refused = await at("dpl_3").receive(topic, "g", wait);
      expect(refused.status).toBe(429);
      expect(await errorCode(refused)).toBe("too_many_waiters");
      trickles.push(trickle(url, token, topic, "dpl_1"), trickle(url, token, topic, "dpl_2"));
      // Two waiters and two trickling publishes: the tenant's four requests in flight.
      await expect
        .poll(() => metric("vqs_namespaces_at_cap", 'cap="requests_in_flight"'), {
          timeout: 10_000,
        })
        .toBe(2);
      const listing = await fetch(`${url}/api/v3/topics`, {
        headers: { authorization: `Bearer ${token}`, "vqs-deployment-id": "dpl_3" },
      });
      expect(listing.status).toBe(429);
      expect(await errorCode(listing)).toBe("too_many_requests_in_flight");
      expect(Number(listing.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      // Another tenant is served meanwhile.
      const other = await fetch(`${url}/api/v3/topics`, {
        headers: { authorization: `Bearer ${await tokenOf("prj_tenant_spread_other")}` },
      });
      expect(other.status).toBe(200);
    } finally {
      for (const t of trickles) t.finish();
      await Promise.all([...trickles.map((t) => t.done), ...waiting]);
    }
    expect((await at("dpl_3").publish(topic, "room again")).status).toBe(201);
  });

  it("holds a namespace whose endpoint never answers to its push cap; another namespace is pushed", async () => {
    const seen = new Map<string, number>();
    let inFlightA = 0;
    let maxInFlightA = 0;
    endpoint = createServer((req: IncomingMessage, res: ServerResponse) => {
      const ns = req.url ?? "";
      seen.set(ns, (seen.get(ns) ?? 0) + 1);
      if (ns.startsWith("/a")) {
        inFlightA++;
        maxInFlightA = Math.max(maxInFlightA, inFlightA);
        held.push(res); // never answered (until the test ends)
        res.on("close", () => inFlightA--);
        return;
      }
      req.resume();
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => endpoint!.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    const url = fx.gateways[0]!.url;
    const tokenA = await tokenOf("prj_push_a");
    const tokenB = await tokenOf("prj_push_b");
    const topic = uniqueName();
    // Three pushed groups in A, each allowed 5 at once: 15 without the namespace cap.
    for (const g of ["g1", "g2", "g3"]) {
      await api(url, tokenA).publish(topic, "make");
      const put = await settingsApi(url, tokenA).put(topic, g, {
        push: { url: `${base}/a/${g}`, maxConcurrency: 5, timeoutSeconds: 30 },
      });
      expect(put.status).toBeLessThan(300);
    }
    for (let i = 0; i < 20; i++) await api(url, tokenA).publish(topic, `a-${i}`);
    await api(url, tokenB).publish(topic, "make");
    const putB = await settingsApi(url, tokenB).put(topic, "g", { push: { url: `${base}/b` } });
    expect(putB.status).toBeLessThan(300);
    for (let i = 0; i < 10; i++) await api(url, tokenB).publish(topic, `b-${i}`);
    // Every one of B's messages is pushed while A's endpoint holds its pushes.
    expect(await eventually(() => (seen.get("/b") ?? 0) >= 10, 15_000)).toBe(true);
    // A's groups have pulled all they will while its endpoint holds the cap: the two pushed and
    // one held by each group (the store's count of what they have leased).
    const pulledByA = async () =>
      (await figures(tokenA, topic))
        .filter((g) => g.name !== "g")
        .reduce((n, g) => n + g.inFlight, 0);
    expect(await eventually(async () => inFlightA === 2 && (await pulledByA()) === 5, 15_000)).toBe(
      true,
    );
    // The cap (2): what the groups pulled beyond it is held, not pushed.
    expect(maxInFlightA).toBe(2);
    expect(await metric("vqs_namespaces_at_cap", 'cap="pushes_in_flight"')).toBe(1);
  });

  it("keeps a message held at the cap leased while it waits, and pushes it once", async () => {
    const { blockers, pushed, ep } = await blockingEndpoint();
    try {
      const base = ep.base;
      const url = fx.gateways[0]!.url;
      const token = await tokenOf("prj_push_renew");
      const [t1, t2] = [uniqueName(), uniqueName()];
      await api(url, token).publish(t1, "block 1");
      await api(url, token).publish(t1, "block 2");
      await api(url, token).publish(t2, "make");
      const push = (path: string, timeoutSeconds: number) => ({
        push: { url: `${base}${path}`, autoAck: true, maxConcurrency: 5, timeoutSeconds },
      });
      expect((await settingsApi(url, token).put(t1, "g", push("/block", 30))).status).toBe(200);
      expect(await eventually(() => blockers.length === 2, 10_000)).toBe(true);
      // The cap (2) is taken: t2's message is held, with a lease of 1 + 2 s from its pull.
      expect((await settingsApi(url, token).put(t2, "g", push("/count", 1))).status).toBe(200);
      await sleep(7000); // more than two such leases
      expect(pushed).toEqual([]);
      for (const r of blockers.splice(0)) r.writeHead(200).end();
      // Acknowledged (autoAck): nothing of the group is left to come again.
      const group = await settled(token, t2, "g");
      expect(group).toMatchObject({ deliveries: 1, redelivered: 0 });
      expect(pushed).toEqual(["make 1"]); // not delivered again while it was held
    } finally {
      for (const r of blockers) r.destroy();
      await ep.close();
    }
  });

  it("frees a push's slot at its acknowledgement, before the endpoint answers, for at most maxConcurrency pushes; a push failing after its ack is not retried", async () => {
    const url = fx.gateways[0]!.url;
    const token = await tokenOf("prj_push_ack_slot");
    // The real client's handleCallback: the handler runs, the client acknowledges through the
    // gateway, and only then is the endpoint's answer ready; it is held here until the test
    // lets it go (as a busy app's thread would hold it).
    const client = new QueueClient({
      region: "iad1",
      token,
      deploymentId: null,
      resolveBaseUrl: () => new URL(url),
      transport: new BufferTransport(),
    });
    const handled: string[] = [];
    let running = 0;
    let maxRunning = 0;
    // The first handlers are held until the test has seen the cap taken by them.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const handle = client.handleCallback(async (payload: unknown) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await gate;
      handled.push(String(payload));
      running--;
    });
    const unanswered: ServerResponse[] = [];
    const statuses: number[] = [];
    const ep = await pushEndpoint((req, body, res) => {
      const request = new Request(`http://app${req.url}`, {
        method: "POST",
        headers: Object.entries(req.headers).flatMap(([k, v]) =>
          typeof v === "string" ? [[k, v] as [string, string]] : [],
        ),
        body,
      });
      void handle(request).then((answer) => {
        statuses.push(answer.status);
        unanswered.push(res);
      });
    });
    try {
      const topic = uniqueName();
      await api(url, token).publish(topic, "m0");
      for (let i = 1; i < 9; i++) await api(url, token).publish(topic, `m${i}`);
      const put = await settingsApi(url, token).put(topic, "g", {
        push: { url: `${ep.base}/p`, maxConcurrency: 5, timeoutSeconds: 30 },
        retry: { afterSeconds: 1 },
      });
      expect(put.status).toBeLessThan(300);
      // Two handlers hold the cap before their acknowledgement; the group has pulled one more
      // and holds it (the store's count of what it has leased), no third handler running.
      const inFlight = async () => (await figures(token, topic))[0]?.inFlight ?? 0;
      expect(await eventually(async () => running === 2 && (await inFlight()) === 3, 15_000)).toBe(
        true,
      );
      open();
      // The cap is 2 and no endpoint answer has gone: without the slot freed at the ack, two.
      // With it, the group's maxConcurrency (5) may stay open past their acknowledgement, and
      // two more hold the namespace's slots: seven, the last two left in the store meanwhile.
      expect(await eventually(() => unanswered.length === 7, 15_000)).toBe(true);
      const [left] = await figures(token, topic);
      expect(left!.backlog + left!.inFlight).toBe(2);
      expect(handled).toHaveLength(7);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
      // At most the cap of handlers ran before their acknowledgement.
      expect(maxRunning).toBeLessThanOrEqual(2);
      // Each push now fails (500) after its message was acknowledged: none is pushed again,
      // and the last two messages are pushed once slots free.
      for (const r of unanswered.splice(0)) r.writeHead(500).end();
      expect(await eventually(() => unanswered.length === 2, 15_000)).toBe(true);
      for (const r of unanswered.splice(0)) r.writeHead(500).end();
      // Every message acknowledged, each delivered once: none came back after its failed push.
      expect(await settled(token, topic, "g")).toMatchObject({ deliveries: 9, redelivered: 0 });
      expect([...handled].sort()).toEqual(["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"]);
      expect(unanswered).toHaveLength(0);
    } finally {
      for (const r of unanswered) r.destroy();
      await ep.close();
    }
  }, 45_000);
});

/**
 * A push endpoint that leaves pushes to `/block` unanswered (in `blockers`, to take the
 * namespace's slots) and answers the others 200, noting each as "body deliveryCount".
 */
async function blockingEndpoint() {
  const blockers: ServerResponse[] = [];
  const pushed: string[] = [];
  const ep = await pushEndpoint((req, body, res) => {
    if (req.url === "/block") return void blockers.push(res);
    pushed.push(`${body} ${String(req.headers["ce-vqsdeliverycount"])}`);
    res.writeHead(200).end();
  });
  return { blockers, pushed, ep };
}

/** An HTTP endpoint for pushes: `onPush` gets each request with its body read. */
async function pushEndpoint(
  onPush: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<{ base: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => onPush(req, Buffer.concat(chunks).toString(), res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A publish whose body arrives slowly: in flight until `finish`. */
function trickle(base: string, token: string, topic: string, deployment?: string) {
  let finish!: () => void;
  const rest = new Promise<void>((r) => (finish = r));
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(new TextEncoder().encode("slow "));
      await rest;
      c.enqueue(new TextEncoder().encode("body"));
      c.close();
    },
  });
  const done = fetch(`${base}/api/v3/topic/${topic}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "text/plain",
      ...(deployment !== undefined ? { "vqs-deployment-id": deployment } : {}),
    },
    body,
    duplex: "half",
  }).then((r) => r.status);
  return { finish, done };
}

// Regional failover with two regions on one machine (two nats-servers, two gateways): while the
// home region's NATS is down, publishes are answered 202 and stored in the neighbour, where they
// are not readable; when home recovers, each is delivered there exactly once, with its payload,
// content type, timestamp, TTL, delay and idempotency key. With neither region able to store a
// publish, it answers 503. A body above the inline limit is never deferred: 503
// large_body_not_deferred with Retry-After.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer } from "../../src/dev/nats-server-process.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { api, errorCode, parts, uniqueName } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { startTestNats, type TestNats } from "../helpers/processes/nats.js";
import { eventually } from "../helpers/wait.js";

let home: TestNats;
let neighbour: TestNats;
let issuer: TestIssuer;
let gwHome: TestGateway;
let gwNeighbour: TestGateway;

beforeAll(async () => {
  home = await startTestNats();
  neighbour = await startTestNats();
  issuer = await startIssuer();
  gwHome = await startGateway(home.url, issuer, {
    env: { VQS_FAILOVER_REGIONS: `sfo1=${neighbour.url}` },
    config: { requestTimeoutMs: 1000 },
  });
  gwNeighbour = await startGateway(neighbour.url, issuer, { env: { VQS_REGION: "sfo1" } });
});

afterAll(async () => {
  await gwHome?.close();
  await gwNeighbour?.close();
  await issuer?.close();
  await home?.dispose();
  await neighbour?.dispose();
});

async function drain(q: ReturnType<typeof api>, topic: string, group: string) {
  const got: { body: string; type: string | null; ts: number; count: string | null }[] = [];
  for (;;) {
    const res = await q.receive(topic, group, { "vqs-max-messages": "10" });
    if (res.status !== 200) break;
    for (const p of await parts(res)) {
      got.push({
        body: p.body.toString(),
        type: p.headers.get("content-type"),
        ts: Date.parse(p.headers.get("vqs-timestamp")!),
        count: p.headers.get("vqs-delivery-count"),
      });
      await q.ack(topic, group, p.headers.get("vqs-receipt-handle")!);
    }
  }
  return got;
}

describe("regional failover", () => {
  it("defers publishes to a neighbour during an outage and delivers each once at home after", async () => {
    const token = await issuer.token();
    const q = api(gwHome.url, token);
    const topic = uniqueName("orders");
    expect((await q.publish(topic, "before")).status).toBe(201);
    // A body above the inline limit is stored in the home region's body store (nats-server
    // 2.11+; older ones refuse it with 413 large_body_unsupported).
    const big = Buffer.alloc(2 * 1024 * 1024, 7);
    const bigTopic = uniqueName("big");
    const bigBefore = await q.publish(bigTopic, big);
    expect([201, 413]).toContain(bigBefore.status);
    const largeBodies = bigBefore.status === 201;

    await home.stop();
    const outageStarted = Date.now();
    // A large body is never deferred (it belongs to its region's store): 503 with Retry-After,
    // and the client keeps it to retry.
    const bigDuring = await q.publish(bigTopic, big);
    if (largeBodies) {
      expect(bigDuring.status).toBe(503);
      expect(bigDuring.headers.get("retry-after")).toBe("5");
      expect(await errorCode(bigDuring)).toBe("large_body_not_deferred");
    } else {
      expect(await errorCode(bigDuring)).toBe("large_body_unsupported");
    }
    const deferred: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await q.publish(topic, `during-${i}`, { "content-type": "text/x-during" });
      expect(res.status).toBe(202);
      expect(await res.json()).toEqual({ deferred: true });
      deferred.push(`during-${i}`);
    }
    // A client retrying a keyed publish during the outage: one delivery.
    for (let i = 0; i < 3; i++) {
      expect((await q.publish(topic, "keyed", { "vqs-idempotency-key": "k-1" })).status).toBe(202);
    }
    const delayedAt = Date.now();
    expect((await q.publish(topic, "delayed", { "vqs-delay-seconds": "3" })).status).toBe(202);
    // Still ready: publishes are taken (202) while the neighbour can store them.
    expect((await fetch(`${gwHome.url}/readyz`)).status).toBe(200);
    // Nothing is readable in the neighbour region, under the same names.
    expect((await api(gwNeighbour.url, token).receive(topic, "workers")).status).toBe(204);

    const restarted = await startNatsServer(home.options);
    try {
      // Everything comes home: the 12 taken during the outage at once, the delayed one when due
      // (3 s from its original publish), whichever comes first on a busy machine.
      let all: Awaited<ReturnType<typeof drain>> = [];
      let delayedArrived = 0;
      await eventually(
        async () => {
          const got = await drain(q, topic, "workers");
          if (got.some((m) => m.body === "delayed")) delayedArrived = Date.now();
          return (all = all.concat(got)).length >= 13;
        },
        Math.max(0, delayedAt + 3000 - Date.now()) + 30_000,
        250,
      );
      const late = all.filter((m) => m.body === "delayed");
      all = all.filter((m) => m.body !== "delayed");
      console.log("regional failover", {
        answered202: deferred.length + 4,
        deliveredAtHome: all.length,
        secondsUntilAllRelocated: (Date.now() - outageStarted) / 1000,
      });
      expect(all.map((m) => m.body).sort()).toEqual(["before", ...deferred, "keyed"].sort());
      if (largeBodies) {
        // The large body from before the outage is whole; the refused one left nothing.
        const got = await parts(await q.receive(bigTopic, "g", { "vqs-max-messages": "10" }));
        expect(got.map((p) => p.body.equals(big))).toEqual([true]);
      }
      const during = all.filter((m) => m.body.startsWith("during-"));
      expect(during.every((m) => m.type === "text/x-during")).toBe(true);
      // Timestamps are those of the original publish, not of the relocation.
      expect(during.every((m) => m.ts >= outageStarted - 1000 && m.ts < Date.now() - 200)).toBe(
        true,
      );
      // The delayed message keeps its delay, counted from the original publish.
      expect(delayedArrived).toBeGreaterThanOrEqual(delayedAt + 2500);
      expect(late.map((m) => [m.body, m.count])).toEqual([["delayed", "1"]]);
      expect(await drain(q, topic, "workers")).toEqual([]);
    } finally {
      await restarted.stop();
    }
  }, 60_000);

  it("answers 503 when neither home nor any neighbour can store the message", async () => {
    // Home is down (stopped by the test above or never restarted here); stop the neighbour too.
    await neighbour.stop();
    const res = await api(gwHome.url, await issuer.token()).publish(uniqueName(), "x");
    expect(res.status).toBe(503);
    expect(await errorCode(res)).toBe("storage_unavailable");
  }, 30_000);
});

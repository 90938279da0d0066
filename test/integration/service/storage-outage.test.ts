// When JetStream cannot be reached, nothing is acknowledged that is not stored: publish answers
// 503 (retryable) within the request bound, readiness turns false, and the gateway recovers by
// itself when the server is back, with every message answered 201 still there.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer } from "../../../src/dev/nats-server-process.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { eventually } from "../../helpers/wait.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer, { config: { requestTimeoutMs: 1000 } });
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

describe("storage outage", () => {
  it("answers 503 when a pull gets no answer, and releases what arrives late", async () => {
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    expect((await q.publish(topic, "m1")).status).toBe(201);
    // Warm up the connection (a receive right after a publish may, rarely, see nothing yet on
    // nats-server 2.9: see docs/architecture.md, "Pulls").
    let warm = 0;
    for (let i = 0; i < 10 && warm !== 200; i++) warm = (await q.receive(topic, "warm")).status;
    expect(warm).toBe(200);
    nats.pause();
    let status = 0;
    try {
      status = (await q.receive(topic, "g")).status;
    } finally {
      nats.resume();
    }
    expect(status).toBe(503);
    // The stalled pull's message is released on arrival, not left leased to nobody for 60 s.
    let got: string[] = [];
    await eventually(
      async () => {
        const res = await q.receive(topic, "g");
        if (res.status === 200) got = (await parts(res)).map((p) => p.body.toString());
        return got.length > 0;
      },
      3000,
      100,
    );
    expect(got).toEqual(["m1"]);
  });

  it("answers 503 while NATS is down and recovers when it is back", async () => {
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    expect((await q.publish(topic, "before")).status).toBe(201);

    await nats.stop();
    const started = Date.now();
    const res = await q.publish(topic, "during");
    expect(res.status).toBe(503);
    expect(await errorCode(res)).toBe("storage_unavailable");
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await q.receive(topic, "g")).status).toBe(503);
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);

    const restarted = await startNatsServer(nats.options);
    try {
      const ready = await eventually(
        async () => (await fetch(`${gw.url}/readyz`)).status === 200,
        10_000,
        200,
      );
      expect(ready).toBe(true);
      expect((await q.publish(topic, "after")).status).toBe(201);
      const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
      expect(got.map((p) => p.body.toString())).toEqual(["before", "after"]);
    } finally {
      await restarted.stop();
    }
  });
});

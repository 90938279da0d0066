// A 100 MB body (the default limit, exactly 10^8 bytes) pushed to the real @vercel/queue
// handleCallback: the push carries no body, the handler's client receives it by ID, byte-exact.
// BufferTransport: @vercel/queue's receiveMessageById returns from inside its multipart loop, so
// with StreamTransport the handler's payload stream ends empty (a client limitation; a pushed
// large body streams to a handler only through a receive of its own). Real nats-server, gateway.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";

const MB = 1_000_000;

const fx = useGateways(1); // the default limit: 100 MB
let app: PushApp;

beforeAll(async () => {
  app = await startPushApp(fx.gateways[0]!.url, await fx.issuer.token());
});

afterAll(async () => {
  await app?.close();
});

describe("a 100 MB push", () => {
  it("reaches handleCallback by ID, byte-exact", async () => {
    const topic = uniqueName("push-100");
    const token = await fx.issuer.token();
    const got: string[] = [];
    const url = app.fetchRoute(topic, {
      transport: "buffer",
      handler: (payload) =>
        void got.push(
          createHash("sha256")
            .update(payload as Buffer)
            .digest("hex"),
        ),
    });
    const q = api(fx.gateways[0]!.url, token);
    const res = await q.call("PUT", `${topic}/consumer/workers/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ push: { url } }),
    });
    expect(res.status).toBe(200);
    const body = randomBytes(100 * MB);
    const want = createHash("sha256").update(body).digest("hex");
    expect((await q.publish(topic, body)).status).toBe(201);
    await expect.poll(() => got.length, { timeout: 60_000 }).toBe(1);
    expect(got[0]).toBe(want);
    const push = app.requests.find((r) => r.path.endsWith(topic))!;
    expect(push.body.length).toBe(0); // no body in the push: the client received it by ID
    await q.call("DELETE", topic);
  }, 90_000);
});

// Expiry, with the gateway's clock moved forward instead of waiting a minute: an expired message
// is never delivered by any path, and receive by ID answers 404 for it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;
let offsetMs = 0;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer, { now: () => Date.now() + offsetMs });
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

describe("TTL", () => {
  it("frees an idempotency key when its message expires, and deduplicates against the new one", async () => {
    offsetMs = 0;
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    const key = { "vqs-idempotency-key": "order-1" };
    const first = await q.publish(topic, "first", { ...key, "vqs-retention-seconds": "60" });
    expect(first.status).toBe(201);
    offsetMs = 61_000;
    // The gateway clock is 61 s ahead of the server's, so the next message gets a long TTL.
    const second = await q.publish(topic, "second", { ...key, "vqs-retention-seconds": "3600" });
    const { messageId } = (await second.json()) as { messageId: string };
    expect(messageId).toMatch(/^m/);
    const third = await q.publish(topic, "third", { ...key, "vqs-retention-seconds": "3600" });
    const dup = (await third.json()) as { messageId: string };
    expect(dup.messageId).toMatch(/^x/);
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString())).toEqual(["second"]);
    const res = await q.receiveById(topic, "g2", dup.messageId);
    expect(((await res.json()) as { originalMessageId: string }).originalMessageId).toBe(messageId);
  });

  it("never delivers a message after expiresAt, by receive or by ID", async () => {
    offsetMs = 0;
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    const short = (await (
      await q.publish(topic, "short", { "vqs-retention-seconds": "60" })
    ).json()) as {
      messageId: string;
    };
    await q.publish(topic, "long", { "vqs-retention-seconds": "3600" });
    const leased = await parts(
      await q.receive(topic, "early", { "vqs-visibility-timeout-seconds": "1" }),
    );
    expect(leased.map((p) => p.body.toString())).toEqual(["short"]);

    offsetMs = 61_000;
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString())).toEqual(["long"]);
    const byId = await q.receiveById(topic, "other", short.messageId);
    expect(byId.status).toBe(404);
    expect(await errorCode(byId)).toBe("message_not_found");
    // Nor is it redelivered to the group that held it when its lease runs out.
    await new Promise((r) => setTimeout(r, 1200));
    const again = await parts(await q.receive(topic, "early", { "vqs-max-messages": "10" }));
    expect(again.map((p) => p.body.toString())).toEqual(["long"]);
  });
});

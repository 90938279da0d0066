// Stale receipt handles when a lease is cut short through its own handle: the message comes back
// while the old handle's deadline is still ahead, and every gateway must refuse that handle. Kept
// on real NATS for the two gateways sharing the cut records in JetStream; the rules on one
// gateway, the clock moved by the test: test/unit/queue/stale-handle-rules.test.ts.
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";

const env = useGateways(2);

const handleOf = (p: { headers: Headers }) => p.headers.get("vqs-receipt-handle")!;

describe("handles of a lease cut short", () => {
  it("refuses the released handle on every gateway once the message is delivered again", async () => {
    const token = await env.issuer.token();
    const [qa, qb] = [api(env.gateways[0]!.url, token), api(env.gateways[1]!.url, token)];
    const topic = uniqueName();
    await qa.publish(topic, "x");
    const [first] = await parts(await qa.receive(topic, "g"));
    const old = handleOf(first!);
    expect((await qa.extend(topic, "g", old, 0)).status).toBe(200); // release, via a
    const [second] = await parts(await qb.receive(topic, "g"));
    expect(second!.headers.get("vqs-delivery-count")).toBe("2");

    for (const q of [qa, qb]) {
      const ack = await q.ack(topic, "g", old);
      expect(ack.status).toBe(409);
      expect(await errorCode(ack)).toBe("receipt_handle_stale");
      expect((await q.extend(topic, "g", old, 30)).status).toBe(409);
      expect((await q.extend(topic, "g", old, 0)).status).toBe(409);
    }
    // Nothing changed: the current holder still has it, and its handle works, twice.
    expect((await qa.receive(topic, "g")).status).toBe(204);
    expect((await qb.ack(topic, "g", handleOf(second!))).status).toBe(204);
    expect((await qa.ack(topic, "g", handleOf(second!))).status).toBe(204);
  });

  it("keeps a shortened handle valid until the message is delivered again", async () => {
    const token = await env.issuer.token();
    const [qa, qb] = [api(env.gateways[0]!.url, token), api(env.gateways[1]!.url, token)];
    const topic = uniqueName();
    await qa.publish(topic, "y");
    const [first] = await parts(await qa.receive(topic, "g"));
    const handle = handleOf(first!);
    expect((await qb.extend(topic, "g", handle, 30)).status).toBe(200); // longer: no cut
    expect((await qb.extend(topic, "g", handle, 1)).status).toBe(200); // shorter: cut
    // Before the message comes back, the handle is still the current one.
    expect((await qa.extend(topic, "g", handle, 1)).status).toBe(200);
    expect((await qb.ack(topic, "g", handle)).status).toBe(204);
    // Past the cut lease's end, it does not come back (a long poll waits on the server).
    expect((await qa.receive(topic, "g", { "vqs-wait-seconds": "2" })).status).toBe(204);
  });
});

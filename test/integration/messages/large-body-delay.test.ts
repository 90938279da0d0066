// A delayed large publish (Vqs-Delay-Seconds on a body above the inline limit): not received
// before its delay, then delivered byte-exact from the body store. Real nats-server.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, parts, uniqueName } from "../../helpers/http.js";
import { eventually } from "../../helpers/wait.js";

const fx = useGateways(1);

describe("a delayed large publish", () => {
  it("is delivered byte-exact after its delay, not before", async () => {
    const q = api(fx.gateways[0]!.url, await fx.issuer.token());
    const topic = uniqueName("delay-large");
    const body = randomBytes(3_000_000);
    const published = Date.now();
    const res = await q.publish(topic, body, { "vqs-delay-seconds": "2" });
    expect(res.status).toBe(201);
    expect((await q.receive(topic, "g")).status).toBe(204);
    let got: Response | undefined;
    await eventually(
      async () => {
        const r = await q.receive(topic, "g");
        if (r.status === 200) got = r;
        return got !== undefined;
      },
      20_000,
      200,
    );
    // Not before its delay (less a little for the clocks' rounding to whole seconds).
    expect(Date.now() - published).toBeGreaterThanOrEqual(1900);
    expect(got?.status).toBe(200);
    const [part] = await parts(got!);
    expect(part!.body.equals(body)).toBe(true);
    await q.call("DELETE", topic);
  });
});

// A purge while a message is leased, then a receive on the same group: the group goes on with an
// empty topic and takes new messages. Runs on both servers (nats-server 2.9.10 once answered no
// pull after such a purge: the receive failed with 503 storage_unavailable every time).
import { beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, parts, uniqueName } from "../../helpers/http.js";
import { attemptUntil } from "../../helpers/wait.js";

const fx = useGateways(1);
let token: string;
beforeAll(async () => {
  token = await fx.issuer.token({ sub: "alice" });
});
const q = () => api(fx.gateways[0]!.url, token);

async function bodies(res: Response): Promise<string[]> {
  if (res.status === 204) return [];
  expect(res.status, await res.clone().text()).toBe(200);
  return (await parts(res)).map((p) => p.body.toString());
}

describe("purge with a leased message", () => {
  it("receives on the same group after the purge, before and after the lease ends", async () => {
    const topic = uniqueName("purge-leased");
    for (const body of ["1", "2", "3"]) expect((await q().publish(topic, body)).status).toBe(201);
    const lease = { "vqs-max-messages": "1", "vqs-visibility-timeout-seconds": "1" };
    expect(await bodies(await q().receive(topic, "g", lease))).toEqual(["1"]);
    const purge = await q().call("POST", `${topic}/purge`);
    expect(purge.status, await purge.clone().text()).toBe(200);
    expect(await bodies(await q().receive(topic, "g"))).toEqual([]);
    // A new message is taken, and leased after the purged one for as long: once it comes back,
    // the purged one's lease has ended too, and nothing of that one comes back.
    expect((await q().publish(topic, "4")).status).toBe(201);
    expect(await bodies(await q().receive(topic, "g", lease))).toEqual(["4"]);
    const back = await attemptUntil(
      async () => bodies(await q().receive(topic, "g")),
      (got) => got.length > 0,
      { tries: 100, everyMs: 100 },
    );
    expect(back).toEqual(["4"]);
    expect((await q().publish(topic, "5")).status).toBe(201);
    expect(await bodies(await q().receive(topic, "g"))).toEqual(["5"]);
  });
});

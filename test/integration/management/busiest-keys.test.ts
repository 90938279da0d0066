// A group's busiest flow-control keys on a real nats-server, two gateways: what one gateway
// handed out is in flight on the other's answer (the slot records are the region's KV bucket),
// what waits is counted in the sample of the group's oldest unacknowledged messages, and a key's
// value is read back from its messages (the store keeps it hashed). Bad input is a clear 4xx.
import { beforeAll, describe, expect, it } from "vitest";
import type { BusiestKeys } from "../../../src/api/management.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { attemptUntil } from "../../helpers/wait.js";

const fx = useGateways(2);
const NS = makeNamespace("team_a", "prj_1", "production", null);
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
});

const q = (i: number) => api(fx.gateways[i]!.url, token);

async function keys(i: number, topic: string, group: string, query = ""): Promise<Response> {
  return q(i).call("GET", `${topic}/consumer/${group}/keys${query}`);
}

async function keyed(topic: string, text: string, tenant: string | null): Promise<void> {
  const res = await q(0).publish(topic, text, {
    "content-type": "text/plain",
    ...(tenant === null ? {} : { tenant }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

describe("busiest keys of a group, region-wide", () => {
  it("lists keys in flight on another gateway and waiting, busiest first, with their values", async () => {
    const topic = uniqueName("keys");
    const put = await q(0).call("PUT", `${topic}/consumer/workers/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ flowControl: { key: "Tenant", concurrency: 1 } }),
    });
    expect(put.status, await put.clone().text()).toBe(200);
    for (const gw of fx.gateways) {
      await expect
        .poll(() => gw.gateway.settings.effective(NS, topic, "workers")?.flowControl?.concurrency)
        .toBe(1);
    }
    const long = "x".repeat(300);
    await keyed(topic, "b1", "beta");
    for (const t of ["a1", "a2", "a3"]) await keyed(topic, t, "acme");
    await keyed(topic, "l1", long);
    await keyed(topic, "n1", null);

    const got = await parts(await q(0).receive(topic, "workers", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString()).sort()).toEqual(["a1", "b1", "l1", "n1"]);

    const res = await keys(1, topic, "workers");
    expect(res.status).toBe(200);
    const body = (await res.json()) as BusiestKeys;
    expect(body.flowControl).toMatchObject({ key: "tenant", concurrency: 1 });
    expect(body.keys[0]).toMatchObject({
      key: "acme",
      keyTruncated: false,
      inFlight: 1,
      waiting: 2,
    });
    expect(
      body.keys
        .slice(1)
        .map((k) => [k.key, k.keyTruncated, k.inFlight, k.waiting])
        .sort(),
    ).toEqual(
      [
        ["beta", false, 1, 0],
        [long.slice(0, 256), true, 1, 0],
      ].sort(),
    );
    expect(body.keys.every((k) => /^[0-9a-f]{32}$/.test(k.keyHash))).toBe(true);
    expect(body.keyRecords).toEqual({ read: 3, complete: true });
    expect(body.waitingSample).toEqual({ messages: 6, fromSequence: 1, complete: true });

    // limit: the busiest only.
    const one = (await (await keys(1, topic, "workers", "?limit=1")).json()) as BusiestKeys;
    expect(one.keys.map((k) => k.key)).toEqual(["acme"]);

    // b1 acknowledged (the floor passes it): beta is neither in flight nor waiting, not listed.
    const b1 = got.find((p) => p.body.toString() === "b1")!;
    expect((await q(1).ack(topic, "workers", b1.headers.get("vqs-receipt-handle")!)).status).toBe(
      204,
    );
    const after = await attemptUntil(
      async () => (await (await keys(0, topic, "workers")).json()) as BusiestKeys,
      (b) => b.waitingSample.fromSequence === 2,
      { tries: 20, everyMs: 100 },
    );
    expect(after.keys.map((k) => k.key)).not.toContain("beta");
    expect(after.keys[0]).toMatchObject({ key: "acme", inFlight: 1, waiting: 2 });
  }, 30_000);

  it("answers a group without flow control with no keys, and bad input with a clear 4xx", async () => {
    const topic = uniqueName("keys-plain");
    await keyed(topic, "m", "acme");
    expect((await q(0).receive(topic, "plain")).status).toBe(200);
    const res = await keys(1, topic, "plain");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      flowControl: null,
      keys: [],
      keyRecords: { read: 0, complete: true },
      waitingSample: { messages: 0, fromSequence: 1, complete: true },
    });

    const missing = await keys(0, topic, "nobody");
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("group_not_found");
    const noTopic = await keys(0, uniqueName("none"), "plain");
    expect(noTopic.status).toBe(404);
    expect(await errorCode(noTopic)).toBe("group_not_found");
    for (const query of ["?limit=0", "?limit=101", "?limit=abc", "?limit=1&limit=2"]) {
      const bad = await keys(0, topic, "plain", query);
      expect(bad.status, query).toBe(400);
      expect(await errorCode(bad)).toBe("invalid_query");
    }
    const badName = await keys(0, topic, "bad%20name");
    expect(badName.status).toBe(400);
  }, 30_000);
});

// Vqs-Max-Concurrency under contention: consumers on two gateways that receive and acknowledge
// in a loop get every message within a bound, while never more than the limit is leased at once
// (messages released unseen at the limit must not keep the group refusing for ever). Kept on
// real NATS for two gateways racing through JetStream; the same loop on one gateway, and the
// limit's other rules, on the twins: test/unit/queue/concurrency-rules.test.ts and
// delivery-rules.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, parts, uniqueName } from "../../helpers/http.js";
import { eventually } from "../../helpers/wait.js";

const fx = useGateways(2);
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
});

afterAll(() => undefined);

describe("Vqs-Max-Concurrency under contention", () => {
  it("delivers every message to consumers looping on two gateways, never past the limit", async () => {
    const qs = fx.gateways.map((g) => api(g.url, token));
    const topic = uniqueName("conc-loop");
    const bodies = Array.from({ length: 8 }, (_, i) => `m${i}`);
    expect((await qs[0]!.publishBatch(topic, bodies)).status).toBe(200);
    const limit = { "vqs-max-concurrency": "1" };
    const delivered = new Set<string>();
    const consumers = 4;
    let leased = 0;
    let most = 0;
    let refusals = 0;
    let acks = 0;
    /** Consumers waiting, after a refusal, for the group to change. */
    let waiting = 0;
    const untilMs = Date.now() + 20_000;
    // Two consumers per gateway; each holds what it got until another has met the group at its
    // limit (or every other one waits for it), so messages get released unseen; one refused
    // tries again once a message was acknowledged, or at once when none is held.
    const consumer = async (i: number) => {
      const q = qs[i % 2]!;
      while (delivered.size < bodies.length && Date.now() < untilMs) {
        const res = await q.receive(topic, "workers", limit);
        if (res.status !== 200) {
          expect([204, 429]).toContain(res.status);
          if (res.status === 429) refusals++;
          await res.text();
          const acked = acks;
          waiting++;
          await eventually(() => acks !== acked || leased === 0, untilMs - Date.now(), 5);
          waiting--;
          continue;
        }
        const got = await parts(res);
        expect(got).toHaveLength(1);
        leased++;
        most = Math.max(most, leased);
        const refused = refusals;
        await eventually(() => refusals !== refused || waiting === consumers - leased, 5000, 5);
        delivered.add(got[0]!.body.toString());
        const acked = await q.ack(topic, "workers", got[0]!.headers.get("vqs-receipt-handle")!);
        expect(acked.status).toBe(204);
        leased--;
        acks++;
      }
    };
    await Promise.all(Array.from({ length: consumers }, (_, i) => consumer(i)));
    expect(refusals).toBeGreaterThan(0); // the limit was met
    expect([...delivered].sort()).toEqual([...bodies].sort());
    // One gateway's receives take turns; two gateways racing may overshoot by one limit.
    expect(most).toBeLessThanOrEqual(2);
  }, 40_000);
});

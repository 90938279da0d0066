// Ten thousand delayed messages: they wait in JetStream (timers NAKed until due), do not hold back
// immediate messages meanwhile, and are then all delivered once, with deliveryCount 1. (20,000
// took more than the 25 s delay to publish on a loaded 2-core machine, and the test then proves
// nothing; the scale as a throughput is the benchmark's: bench:tenants.)
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, parts, uniqueName } from "../../helpers/http.js";

// The delayed messages as fast as they go: no cap on delayed publishes per second.
const env = useGateways(2, {
  env: { VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE: "0" },
  config: { maxTimerMovesPerSecondPerNamespace: 0 },
});

const DELAYED = 10_000;
const BATCH = 100;
const DELAY_SECONDS = 25;
/** Leases that outlast the test: a message received once never comes back into what it counts. */
const HELD = { "vqs-visibility-timeout-seconds": "3600" };

async function pool<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

describe("delayed messages at scale", () => {
  it(`keeps ${DELAYED} delayed messages out of the way of immediate ones, then delivers each once`, async () => {
    const token = await env.issuer.token();
    const [qa, qb] = [api(env.gateways[0]!.url, token), api(env.gateways[1]!.url, token)];
    const topic = uniqueName("many");
    const started = Date.now();
    await pool(DELAYED / BATCH, 8, async (i) => {
      const bodies = Array.from({ length: BATCH }, (_, j) => `d${i * BATCH + j}`);
      const res = await (i % 2 ? qb : qa).publishBatch(topic, bodies, {
        "Vqs-Delay-Seconds": String(DELAY_SECONDS),
      });
      expect(res.status).toBe(200);
      const { results } = (await res.json()) as { results: Array<{ status: string }> };
      expect(results.every((r) => r.status === "sent")).toBe(true);
    });
    expect(Date.now() - started).toBeLessThan(DELAY_SECONDS * 1000); // else the test proves nothing

    // Immediate messages go straight through while every timer is held: none of the delayed
    // ones is visible, and they do not count as in flight for Vqs-Max-Concurrency.
    for (let i = 0; i < 20; i++) expect((await qa.publish(topic, `now${i}`)).status).toBe(201);
    const immediate = await parts(
      await qb.receive(topic, "g", {
        "vqs-max-messages": "10",
        "vqs-max-concurrency": "20",
        ...HELD,
      }),
    );
    const more = await parts(
      await qa.receive(topic, "g", {
        "vqs-max-messages": "10",
        "vqs-max-concurrency": "20",
        ...HELD,
      }),
    );
    const early = [...immediate, ...more].map((p) => p.body.toString());
    expect(early.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `now${i}`).sort());
    expect(Date.now() - started).toBeLessThan(DELAY_SECONDS * 1000);

    // When due: every delayed message exactly once, first delivery.
    await new Promise((r) =>
      setTimeout(r, Math.max(0, started + DELAY_SECONDS * 1000 - Date.now())),
    );
    const seen = new Set<string>();
    let counts = true;
    const deadline = Date.now() + 120_000;
    while (seen.size < DELAYED && Date.now() < deadline) {
      const batches = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          (i % 2 ? qb : qa)
            .receive(topic, "g", {
              "vqs-max-messages": "10",
              ...HELD,
            })
            .then((res) => (res.status === 200 ? parts(res) : [])),
        ),
      );
      for (const p of batches.flat()) {
        const body = p.body.toString();
        expect(seen.has(body)).toBe(false);
        seen.add(body);
        if (p.headers.get("vqs-delivery-count") !== "1") counts = false;
      }
      if (batches.every((b) => b.length === 0)) await new Promise((r) => setTimeout(r, 200));
    }
    expect(seen.size).toBe(DELAYED);
    expect(counts).toBe(true);
  }, 240_000);
});

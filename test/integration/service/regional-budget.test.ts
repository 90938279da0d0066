// Regional rate budgets with two gateways: a tenant publishing through both gets the region's
// budget in all (requests and body bytes per second), not the budget on each gateway; the
// gateways share their demand over core NATS once a second.
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, sleep, uniqueName } from "../../helpers/http.js";

const LIMIT = 20;
const BYTES_LIMIT = 20_000;

const fx = useGateways(2, {
  env: {
    VQS_RATE_LIMIT_PER_SECOND: String(LIMIT),
    VQS_RATE_LIMIT_TEAMS: "team_bytes=100000",
    VQS_RATE_LIMIT_BYTES_PER_SECOND: String(BYTES_LIMIT),
  },
});

/**
 * Publishes `perTick` messages to each gateway every 100 ms for `seconds`; returns the 201s
 * per second of the last `measure` seconds, and the refusals' codes and Retry-After values.
 */
async function drive(
  token: string,
  body: string,
  perTick: number,
  seconds: number,
  measure: number,
) {
  const topic = uniqueName();
  const outcomes: { at: number; status: number; code?: string; retryAfter?: string | null }[] = [];
  const started = Date.now();
  const sends: Promise<void>[] = [];
  while (Date.now() - started < seconds * 1000) {
    for (const g of fx.gateways) {
      for (let i = 0; i < perTick; i++) {
        sends.push(
          api(g.url, token)
            .publish(topic, body)
            .then(async (res) => {
              const o = { at: Date.now() - started, status: res.status };
              if (res.status === 201) outcomes.push(o);
              else
                outcomes.push({
                  ...o,
                  code: await errorCode(res),
                  retryAfter: res.headers.get("retry-after"),
                });
            }),
        );
      }
    }
    await sleep(100);
  }
  await Promise.all(sends);
  const from = (seconds - measure) * 1000;
  const stored = outcomes.filter((o) => o.status === 201 && o.at >= from).length;
  return { perSecond: stored / measure, refused: outcomes.filter((o) => o.status !== 201) };
}

describe("regional rate budgets", () => {
  it("holds a tenant to the region's request budget across two gateways", async () => {
    const token = await fx.issuer.token({ project_id: "prj_budget" });
    // 30 requests/s to each gateway: 60/s asked, 20/s allowed in the region (40/s if each
    // gateway allowed the whole budget).
    const { perSecond, refused } = await drive(token, "x", 3, 5, 3);
    expect(perSecond).toBeGreaterThan(LIMIT * 0.5);
    expect(perSecond).toBeLessThan(LIMIT * 1.5);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.code).toBe("rate_limited");
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  });

  it("holds a tenant to the region's byte budget across two gateways", async () => {
    // A team with room for requests: only the bytes limit (20 kB/s in the region) holds it.
    const token = await fx.issuer.token({ owner_id: "team_bytes", project_id: "prj_bytes" });
    const body = "b".repeat(1000);
    // 30 kB/s to each gateway: 60 kB/s asked.
    const { perSecond, refused } = await drive(token, body, 3, 5, 3);
    const bytesPerSecond = perSecond * body.length;
    expect(bytesPerSecond).toBeGreaterThan(BYTES_LIMIT * 0.5);
    expect(bytesPerSecond).toBeLessThan(BYTES_LIMIT * 1.5);
    expect(refused.every((r) => r.status === 429 && r.code === "rate_limited")).toBe(true);
  });
});

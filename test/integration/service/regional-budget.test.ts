// Regional rate budgets with two gateways: a tenant publishing through both gets the region's
// budget in all (requests and body bytes per second), not the budget on each gateway; the
// gateways share their demand over core NATS once a second. A batch's parts count as requests.
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, sleep, uniqueName } from "../../helpers/http.js";
import { attemptUntil } from "../../helpers/wait.js";

const LIMIT = 20;
const BYTES_LIMIT = 20_000;
const DELAYED_LIMIT = 50;

const fx = useGateways(2, {
  env: {
    VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: String(LIMIT),
    VQS_TENANT_OVERRIDES: "team_bytes:rate=100000",
    VQS_RATE_LIMIT_BYTES_PER_SECOND_PER_TENANT: String(BYTES_LIMIT),
    VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE: String(DELAYED_LIMIT),
  },
});

/**
 * One batch of three seconds' budget (`3 * LIMIT` parts) to a gateway, cut between its parts
 * (some taken, the rest refused alone): sent again while the budget has no room (the whole
 * request refused, or every part), until a window with room takes some of it.
 */
async function bigBatch(
  token: string,
  topic: string,
  headers: Record<string, string> = {},
): Promise<Part[]> {
  const send = async (): Promise<Part[]> => {
    const big = await api(fx.gateways[0]!.url, token).publishBatch(
      topic,
      Array.from({ length: 3 * LIMIT }, (_, i) => `q${i}`),
      headers,
    );
    if (big.status === 429) return [];
    expect(big.status).toBe(200);
    const { results } = (await big.json()) as {
      results: { messageId?: string; statusCode?: number; error?: string }[];
    };
    return results.map((r) => ({
      at: -1,
      stored: !!r.messageId,
      status: r.statusCode,
      error: r.error,
    }));
  };
  const parts = await attemptUntil(send, (p) => p.some((x) => x.stored), {
    tries: 50,
    everyMs: 100,
  });
  expect(parts.some((p) => !p.stored)).toBe(true);
  return parts;
}

/** A batch part's outcome, `at` ms into the drive (-1: the closing big batch). */
interface Part {
  at: number;
  stored: boolean;
  status?: number;
  error?: string;
}

/**
 * Publishes `perTick` messages to each gateway every 100 ms for `seconds` (a load paced in real
 * time: the budgets are per second); returns the 201s per second of the last `measure` seconds,
 * and the refusals' codes and Retry-After values.
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

  it("counts each part of a batch as a request; the parts past the budget fail alone with 429", async () => {
    const token = await fx.issuer.token({ project_id: "prj_batch_parts" });
    const topic = uniqueName();
    const bodies = Array.from({ length: 5 }, (_, i) => `p${i}`);
    const parts: Part[] = [];
    const started = Date.now();
    // A batch of 5 to each gateway every 100 ms for 4 s: 20 requests/s (the budget), carrying
    // 100 messages/s; counted by request, every part would be stored.
    while (Date.now() - started < 4000) {
      await Promise.all(
        fx.gateways.map(async (g) => {
          const res = await api(g.url, token).publishBatch(topic, bodies);
          if (res.status === 429) {
            expect(await errorCode(res)).toBe("rate_limited");
            return;
          }
          expect(res.status).toBe(200);
          const { results } = (await res.json()) as {
            results: { messageId?: string; statusCode?: number; error?: string }[];
          };
          const at = Date.now() - started;
          for (const r of results) {
            parts.push({ at, stored: !!r.messageId, status: r.statusCode, error: r.error });
          }
          // The parts the budget took come first.
          const firstRefused = results.findIndex((r) => !r.messageId);
          if (firstRefused >= 0)
            expect(results.slice(firstRefused).every((r) => !r.messageId)).toBe(true);
        }),
      );
      await sleep(100);
    }
    // Whether a steady batch is cut between its parts depends on the gateway's share of the
    // budget (a share that is a multiple of 5 takes whole batches or refuses whole requests):
    // one batch of three seconds' budget, in a window with room, is always cut.
    const big = await bigBatch(token, topic);
    // The parts the budget took come first.
    const firstRefused = big.findIndex((p) => !p.stored);
    expect(big.slice(firstRefused).every((p) => !p.stored)).toBe(true);
    parts.push(...big);
    const stored = parts.filter((p) => p.stored && p.at >= 2000).length / 2;
    expect(stored).toBeGreaterThan(LIMIT * 0.5);
    expect(stored).toBeLessThan(LIMIT * 1.7);
    const refused = parts.filter((p) => !p.stored);
    expect(refused.length).toBeGreaterThan(0);
    for (const p of refused) {
      expect(p.status).toBe(429);
      expect(p.error).toMatch(/more requests/);
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

  it("holds a namespace to the region's delayed publishes per second; its other publishes and other namespaces go on", async () => {
    // A team with room for requests: only the delayed cap (50/s in the region) holds it.
    const token = await fx.issuer.token({ owner_id: "team_bytes", project_id: "prj_timers" });
    const other = await fx.issuer.token({ owner_id: "team_bytes", project_id: "prj_calm" });
    const topic = uniqueName();
    const bodies = Array.from({ length: 25 }, (_, i) => `t${i}`);
    const delayed = { "vqs-delay-seconds": "60" };
    const parts: Part[] = [];
    const started = Date.now();
    // 25 delayed parts to each gateway every 250 ms for 4 s: 200/s asked, 50/s allowed. Not
    // faster: the batches' bytes (about 15 kB/s) must stay inside the byte budget.
    while (Date.now() - started < 4000) {
      await Promise.all(
        fx.gateways.map(async (g) => {
          const res = await api(g.url, token).publishBatch(topic, bodies, delayed);
          expect(res.status).toBe(200);
          const { results } = (await res.json()) as {
            results: { messageId?: string; statusCode?: number; error?: string }[];
          };
          for (const r of results) {
            const at = Date.now() - started;
            parts.push({ at, stored: !!r.messageId, status: r.statusCode, error: r.error });
          }
        }),
      );
      await sleep(250);
    }
    // Whether a steady batch is cut between its parts depends on the gateway's share of the
    // budget (a share that is a multiple of 5 takes whole batches or refuses whole requests):
    // one batch of three seconds' budget, in a window with room, is always cut.
    parts.push(...(await bigBatch(token, topic, delayed)));
    const stored = parts.filter((p) => p.stored && p.at >= 2000).length / 2;
    expect(stored).toBeGreaterThan(DELAYED_LIMIT * 0.5);
    // Fixed windows shared from last second's demand overshoot a little; each gateway allowing
    // the whole budget would store 100/s.
    expect(stored).toBeLessThan(DELAYED_LIMIT * 1.7);
    const refused = parts.filter((p) => !p.stored);
    expect(refused.length).toBeGreaterThan(0);
    for (const p of refused) {
      expect(p.status).toBe(429);
      expect(p.error).toContain("VQS_MAX_DELAYED_PUBLISHES_PER_SECOND");
    }

    // A single delayed publish past the cap: 429 with Retry-After; an immediate one is taken,
    // and so is another namespace's delayed one.
    let single: Response | null = null;
    for (let i = 0; i < DELAYED_LIMIT * 2 && single === null; i++) {
      const res = await api(fx.gateways[0]!.url, token).publish(topic, "d", delayed);
      if (res.status !== 201) single = res;
    }
    expect(single!.status).toBe(429);
    expect(await errorCode(single!)).toBe("delayed_publish_rate_limited");
    expect(single!.headers.get("retry-after")).toBe("1");
    expect((await api(fx.gateways[0]!.url, token).publish(topic, "now")).status).toBe(201);
    expect((await api(fx.gateways[1]!.url, other).publish(topic, "d", delayed)).status).toBe(201);
  });
});

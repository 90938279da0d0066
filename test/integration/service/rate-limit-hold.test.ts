// The rate limit's hold (rateLimitHoldMs, fixed in production) on a real gateway: a tenant that sends again at
// once on the connection that just answered it 429 has that request held before it is decided, so
// a client ignoring Retry-After gets a few refusals a second per connection, not thousands; the
// refused requests' unread bodies do not break the keep-alive connection; another tenant on the
// same connection (a proxy's) is not held, nor is a client that waited its Retry-After. A
// publish refused by a full storage quota after its body was read keeps the connection too.
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { errorCodeOf, uniqueName } from "../../helpers/http.js";

const HOLD_MS = 800;

const fx = useGateways(1, {
  env: {
    VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "1000",
    VQS_TENANT_OVERRIDES: "team_hold:rate=2,team_full:bytes=1",
  },
  config: { rateLimitHoldMs: HOLD_MS },
});

interface Answer {
  status: number;
  code: string | null;
  retryAfter: string | null;
  /** The client's port: the same one on every answer means one connection. */
  port: number;
  ms: number;
}

/** One publish over `agent` (one keep-alive connection), its body 64 KiB so it spans packets. */
function publish(agent: Agent, token: string, topic: string): Promise<Answer> {
  const body = Buffer.alloc(64 * 1024, "x");
  const url = new URL(`/api/v3/topic/${topic}`, fx.gateways[0]!.url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/octet-stream",
          "content-length": String(body.length),
        },
      },
      (res: IncomingMessage) => {
        const port = res.socket.localPort ?? 0;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          const code = errorCodeOf(text);
          resolve({
            status: res.statusCode ?? 0,
            code,
            retryAfter: res.headers["retry-after"] ?? null,
            port,
            ms: performance.now() - started,
          });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const oneConnection = () => new Agent({ keepAlive: true, maxSockets: 1 });

describe("rate limit hold", () => {
  it("holds a tenant's requests sent at once after its 429 on the same connection; keep-alive survives", async () => {
    const token = await fx.issuer.token({ owner_id: "team_hold", project_id: "prj_flood" });
    const agent = oneConnection();
    const topic = uniqueName();
    const answers: Answer[] = [];
    const started = Date.now();
    // As fast as one connection allows for 3 s, ignoring Retry-After.
    while (Date.now() - started < 3000) answers.push(await publish(agent, token, topic));
    agent.destroy();
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) {
      expect(a.code).toBe("rate_limited");
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Every answer is a 201 or a 429, all on one connection: the refused bodies, unread, were
    // discarded and the next request on the connection was read correctly.
    expect(answers.every((a) => a.status === 201 || a.status === 429)).toBe(true);
    expect(new Set(answers.map((a) => a.port)).size).toBe(1);
    // A request right after a refusal waited for the hold: 3 s allow some 4 of them, where
    // without the hold one connection gets hundreds of refusals.
    const afterRefusal = answers.filter((_, i) => i > 0 && answers[i - 1]!.status === 429);
    expect(afterRefusal.length).toBeGreaterThan(0);
    for (const a of afterRefusal) expect(a.ms).toBeGreaterThanOrEqual(HOLD_MS * 0.9);
    expect(answers.length).toBeLessThan(30);
  });

  it("does not hold another tenant on that connection, nor a client that waited its Retry-After", async () => {
    const flooder = await fx.issuer.token({ owner_id: "team_hold", project_id: "prj_proxy" });
    const other = await fx.issuer.token({ owner_id: "team_other", project_id: "prj_other" });
    const agent = oneConnection();
    const topic = uniqueName();
    let last: Answer;
    do last = await publish(agent, flooder, topic);
    while (last.status !== 429);
    // A proxy's next request on the same connection, for another tenant: decided at once.
    const otherAnswer = await publish(agent, other, topic);
    expect(otherAnswer.status).toBe(201);
    expect(otherAnswer.port).toBe(last.port);
    // Refused again, the flooder now waits its Retry-After: its next request is not held.
    do last = await publish(agent, flooder, topic);
    while (last.status !== 429);
    await new Promise((r) => setTimeout(r, Number(last.retryAfter) * 1000 + 100));
    const waited = await publish(agent, flooder, topic);
    expect(waited.status).toBe(201);
    agent.destroy();
    // Not held: each answered well within the hold (generous for a loaded machine).
    expect(otherAnswer.ms).toBeLessThan(HOLD_MS * 0.9);
    expect(waited.ms).toBeLessThan(HOLD_MS * 0.9);
  });

  it("keeps the connection of a publish refused by a full storage quota once its body is read", async () => {
    const token = await fx.issuer.token({ owner_id: "team_full", project_id: "prj_full" });
    const agent = oneConnection();
    const topic = uniqueName();
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await publish(agent, token, topic));
    agent.destroy();
    // The first may be stored (the quota counts what is stored); the rest are refused.
    expect(answers.at(-1)!.status).toBe(429);
    for (const a of answers.filter((x) => x.status === 429)) {
      expect(a.code).toBe("storage_quota_exceeded");
      expect(a.retryAfter).not.toBeNull();
    }
    // One connection throughout: a refusal no longer closes it (every refusal reconnected).
    expect(new Set(answers.map((a) => a.port)).size).toBe(1);
  });
});

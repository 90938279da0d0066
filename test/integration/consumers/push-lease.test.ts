// The lease of a pushed message, with the real client's handleCallback on a real HTTP app: a
// handler that runs past push.timeoutSeconds keeps its message (the client extends the lease 10 s
// after the push, so the lease it is given is at least 30 s) and is never pushed again meanwhile;
// a push that times out comes back when its lease ends, not before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, sleep, uniqueName } from "../../helpers/http.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";

const fx = useGateways(1);
let app: PushApp;
let token: string;

beforeAll(async () => {
  token = await fx.issuer.token();
  app = await startPushApp(fx.gateways[0]!.url, token);
});

afterAll(async () => {
  await app?.close();
});

const q = () => api(fx.gateways[0]!.url, token);

async function settings(topic: string, body: unknown): Promise<void> {
  const res = await q().call("PUT", `${topic}/consumer/workers/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

const pushesTo = (topic: string) => app.requests.filter((r) => r.path.endsWith(`/${topic}`));

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("the lease of a pushed message", () => {
  it("is never pushed again while its handler holds the lease, whatever timeoutSeconds says", async () => {
    // Both cases run side by side: together they take one lease (about 31 s).
    const slow = uniqueName("lease-slow");
    const runs: { count: number; start: number; end?: number }[] = [];
    // 12 s of work: past the 3 s timeout and past the client's first extension (10 s).
    const slowUrl = app.fetchRoute(slow, {
      handler: async (_p, meta) => {
        const run: (typeof runs)[number] = { count: meta.deliveryCount, start: Date.now() };
        runs.push(run);
        await sleep(12_000);
        run.end = Date.now();
      },
    });
    await settings(slow, { push: { url: slowUrl, timeoutSeconds: 3 }, retry: { afterSeconds: 1 } });

    // A handler that never extends: after its push timed out (1 s) it still holds the lease it
    // was given (30 s), so the retry (1 s) waits for the lease to end.
    const hung = uniqueName("lease-hung");
    let hungCalls = 0;
    const hungUrl = app.hookRoute(hung, 200, () => (++hungCalls === 1 ? 5000 : 0));
    await settings(hung, { push: { url: hungUrl, timeoutSeconds: 1 }, retry: { afterSeconds: 1 } });

    const published = await q().publish(slow, JSON.stringify({ step: 1 }));
    expect(published.status).toBe(201);
    const { messageId } = (await published.json()) as { messageId: string };
    expect((await q().publish(hung, "h")).status).toBe(201);

    // The slow handler ran once, to its end, and its message was pushed once: the client
    // acknowledged it after the work (the push itself had long timed out). Before the fix the
    // timeout released the message and it was pushed again 4 s after the first push.
    await until(() => runs[0]?.end !== undefined, 30_000, "the slow handler to finish");
    expect(runs.map((r) => r.count)).toEqual([1]);
    expect(pushesTo(slow)).toHaveLength(1);
    await expect
      .poll(async () => (await q().receiveById(slow, "workers", messageId)).status, {
        timeout: 5000,
      })
      .toBe(410);
    expect(pushesTo(slow)).toHaveLength(1);
    await until(() => pushesTo(hung).length >= 2, 45_000, "the timed-out push to come back");
    const [first, second] = pushesTo(hung);
    const deadline = Date.parse(first!.headers["ce-vqsvisibilitydeadline"]!);
    // The lease given with the push: at least 30 s, though the timeout is 1 s.
    expect(deadline - first!.atMs).toBeGreaterThanOrEqual(28_000);
    expect(second!.atMs).toBeGreaterThanOrEqual(deadline - 1000);
    expect(second!.headers["ce-vqsdeliverycount"]).toBe("2");

    const timedOut = await (await fetch(`${fx.gateways[0]!.url}/metrics`)).text();
    expect(timedOut).toMatch(/vqs_push_requests_total\{outcome="timeout"\} [2-9]/);
  }, 60_000);
});

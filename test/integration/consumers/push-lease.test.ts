// The lease of a pushed message, with the real client's handleCallback on a real HTTP app: a
// handler that runs past push.timeoutSeconds keeps its message (the client extends the lease 10 s
// after the push, so the lease it is given is at least 30 s) and is never pushed again meanwhile,
// and one that runs past that least lease keeps its message through the client's extensions alone;
// a push that times out comes back when its lease ends, not before. A pushed group's consumer
// takes the push lease as its ack_wait and maxConcurrency as its max_ack_pending, following the
// settings (ack_wait only while no message is out), and gets the defaults back when unpushed.
import { jetstreamManager, type ConsumerInfo } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, sleep, uniqueName } from "../../helpers/http.js";
import { metricValue } from "../../helpers/metrics.js";
import { usePushApp } from "../../helpers/push-app.js";
import { eventually } from "../../helpers/wait.js";

const fx = useGateways(2);
const pushApp = usePushApp(fx);

const q = (gw = 0) => api(fx.gateways[gw]!.url, pushApp.token);

async function settings(topic: string, body: unknown, gw = 0): Promise<void> {
  const res = await q(gw).call("PUT", `${topic}/consumer/workers/settings`, {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

const TIMEOUTS = 'vqs_push_requests_total{outcome="timeout"}';
const pushesTo = (topic: string) =>
  pushApp.app.requests.filter((r) => r.path.endsWith(`/${topic}`));

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  if (!(await eventually(check, ms))) throw new Error(`timed out waiting for ${what}`);
}

describe("the lease of a pushed message", () => {
  it("is never pushed again while its handler holds the lease, whatever timeoutSeconds says, and lasts as long as handleCallback extends it", async () => {
    // Three cases run side by side: together they take one long handler (about 42 s).
    // A 12 s handler: past the 3 s timeout and past the client's first extension (10 s).
    const slow = uniqueName("lease-slow");
    const runs: { count: number; start: number; end?: number }[] = [];
    const slowUrl = pushApp.app.fetchRoute(slow, {
      handler: async (_p, meta) => {
        const run: (typeof runs)[number] = { count: meta.deliveryCount, start: Date.now() };
        runs.push(run);
        await sleep(12_000);
        run.end = Date.now();
      },
    });
    await settings(slow, { push: { url: slowUrl, timeoutSeconds: 3 }, retry: { afterSeconds: 1 } });

    // A 40 s handler: the client's own extensions (changeVisibility through the API, the first
    // 10 s after the push) are all that keeps this message, since the lease it is pushed with
    // ends 30 s after the push, 10 s before the handler does. Were they ignored, it would be
    // pushed again meanwhile.
    const long = uniqueName("lease-long");
    const longRuns: { count: number; end?: number }[] = [];
    const longUrl = pushApp.app.fetchRoute(long, {
      handler: async (_p, meta) => {
        const run: (typeof longRuns)[number] = { count: meta.deliveryCount };
        longRuns.push(run);
        await sleep(40_000);
        run.end = Date.now();
      },
    });
    await settings(long, { push: { url: longUrl, timeoutSeconds: 3 }, retry: { afterSeconds: 1 } });

    // A handler that never extends: after its push timed out (1 s) it still holds the lease it
    // was given (30 s), so the retry (1 s) waits for the lease to end.
    const hung = uniqueName("lease-hung");
    let hungCalls = 0;
    const hungUrl = pushApp.app.hookRoute(hung, 200, () => (++hungCalls === 1 ? 5000 : 0));
    await settings(hung, { push: { url: hungUrl, timeoutSeconds: 1 }, retry: { afterSeconds: 1 } });

    const idOf = async (res: Response) => {
      expect(res.status).toBe(201);
      return ((await res.json()) as { messageId: string }).messageId;
    };
    const slowId = await idOf(await q().publish(slow, JSON.stringify({ step: 1 })));
    const longId = await idOf(await q().publish(long, JSON.stringify({ long: true })));
    expect((await q().publish(hung, "h")).status).toBe(201);

    // The slow handler ran once, to its end, and its message was pushed once: the client
    // acknowledged it after the work (the push itself had long timed out). Before the fix the
    // timeout released the message and it was pushed again 4 s after the first push.
    await until(() => runs[0]?.end !== undefined, 30_000, "the slow handler to finish");
    expect(runs.map((r) => r.count)).toEqual([1]);
    expect(pushesTo(slow)).toHaveLength(1);
    await expect
      .poll(async () => (await q().receiveById(slow, "workers", slowId)).status, {
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

    await until(() => longRuns[0]?.end !== undefined, 70_000, "the long handler to finish");
    const [push, ...again] = pushesTo(long);
    // The lease the push gave ended before the handler did (the handler slept 40 s).
    const longDeadline = Date.parse(push!.headers["ce-vqsvisibilitydeadline"]!);
    expect(longDeadline - push!.atMs).toBeLessThan(40_000);
    expect(longRuns[0]!.end!).toBeGreaterThan(longDeadline);
    expect(again).toEqual([]);
    expect(longRuns.map((r) => r.count)).toEqual([1]);
    // Settled: the client acknowledged it after the work, so the group has it no more.
    await expect
      .poll(async () => (await q().receiveById(long, "workers", longId)).status, {
        timeout: 10_000,
      })
      .toBe(410);
    expect(pushesTo(long)).toHaveLength(1);

    // The timed-out pushes timed out, on whichever gateway pushed them.
    const timeouts = await Promise.all(
      // A gateway that timed none out has no such series yet: 0.
      fx.gateways.map(async (g) => (await metricValue(g.metricsUrl, TIMEOUTS)) || 0),
    );
    expect(timeouts.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2);
  }, 100_000);
});

describe("a pushed group's consumer", () => {
  it("has the push lease as ack_wait and maxConcurrency as max_ack_pending, following the settings", async () => {
    const nc = await connect({ servers: fx.nats.url });
    const jsm = await jetstreamManager(nc);
    const topic = uniqueName("lease-config");
    const names = groupNames("iad1", {
      namespace: makeNamespace("team_a", "prj_1", "production", null),
      topic,
      group: "workers",
    });
    const consumer = async (): Promise<{ ackWait: number; cap: number; pending: number }> => {
      const info: ConsumerInfo = await jsm.consumers.info(names.stream, names.consumer);
      return {
        ackWait: (info.config.ack_wait ?? 0) / 1e6,
        cap: info.config.max_ack_pending ?? 0,
        pending: info.num_ack_pending,
      };
    };
    const becomes = (
      want: Partial<{ ackWait: number; cap: number; pending: number }>,
      timeout = 20_000,
    ) => expect.poll(consumer, { timeout, interval: 100 }).toMatchObject(want);
    let hold = false;
    const url = pushApp.app.hookRoute(topic, 200, () => (hold ? 4000 : 0));
    try {
      expect((await q().publish(topic, "first")).status).toBe(201);
      // autoAck: the lease is the timeout + 2 s.
      await settings(topic, { push: { url, autoAck: true, maxConcurrency: 4, timeoutSeconds: 5 } });
      await becomes({ ackWait: 7000, cap: 4, pending: 0 });
      // Through the other gateway; autoAck false: at least 30 s.
      await settings(topic, { push: { url, maxConcurrency: 7, timeoutSeconds: 5 } }, 1);
      await becomes({ ackWait: 30_000, cap: 7 });
      await settings(topic, { push: { url, autoAck: true, timeoutSeconds: 100 } }, 1);
      await becomes({ ackWait: 102_000, cap: 10 });

      // A message out (its push held 4 s): the cap follows at once, ack_wait only once none is
      // out, since changing it would move that message's lease.
      hold = true;
      expect((await q().publish(topic, "held")).status).toBe(201);
      await until(() => pushesTo(topic).length === 2, 10_000, "the held push");
      await settings(topic, {
        push: { url, autoAck: true, maxConcurrency: 5, timeoutSeconds: 20 },
      });
      await becomes({ cap: 5 });
      expect(await consumer()).toMatchObject({ ackWait: 102_000, pending: 1 });
      hold = false;
      await becomes({ ackWait: 22_000, cap: 5, pending: 0 }, 30_000);

      // No longer pushed: the defaults of a polled group (no cap, consumerAckWaitSeconds).
      const del = await q().call("DELETE", `${topic}/consumer/workers/settings`);
      expect(del.status).toBe(204);
      await becomes({ ackWait: 60_000, cap: -1 });
    } finally {
      await nc.close();
    }
  }, 90_000);
});

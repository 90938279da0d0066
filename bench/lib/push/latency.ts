// Publish-to-handler latency with an otherwise idle system: one message every `intervalMs`,
// published through the gateway's API with its send time in the payload (stamp.ts), to a
// fresh topic whose group is pushed to the plain endpoint (autoAck), then to another pushed to
// handleCallback; the endpoint notes handler time − send time. For comparison the same to a
// polled group: one poller looping receive 10 (+ ack each) with a 2 ms pause after an empty
// answer, as the main run's publish→delivery scenario does (no long polling: a message waits
// for the next poll, so the pause and the empty polls are part of the figure).
import type { GatewayApi } from "../gw.js";
import { parseMultipart } from "../http-client.js";
import { loadAverage, sampleMachine } from "../proc.js";
import type { PushEndpoint } from "./endpoints.js";
import { latencyOf, stampNow } from "./stamp.js";
import { percentiles, round, sleep } from "../stats.js";

export interface LatencyOptions {
  readonly messages: number;
  readonly intervalMs: number;
  readonly payload: Buffer;
}

export interface LatencyResult {
  readonly path: "push plain" | "push handleCallback" | "poll receive 10 (2 ms pause)";
  readonly sent: number;
  readonly received: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** The publish call's own latency (its HTTP round trip). */
  readonly publishP50Ms: number;
  /** Machine busy and steal during the run, % of one core; load average at its end. */
  readonly machineBusy: number;
  readonly steal: number;
  readonly loadAverage: number;
}

/** Waiting for the last messages after the last publish, at most. */
const DRAIN_TIMEOUT_MS = 10_000;

export async function pushLatency(
  api: GatewayApi,
  ep: PushEndpoint,
  o: LatencyOptions,
  log: (line: string) => void,
): Promise<LatencyResult> {
  const topic = `bench-push-latency-${ep.mode}`;
  const group = "latency";
  // The topic first (a probe message), then its push settings: the feed opens on a topic that exists.
  if ((await api.publish(topic, o.payload)).status !== 201) throw new Error(`publish to ${topic}`);
  const before = (await ep.read(true)).ok;
  const put = await api.putSettings(topic, group, {
    push: { url: ep.url, autoAck: ep.mode === "plain" },
  });
  if (put.status !== 200) throw new Error(`PUT settings: HTTP ${put.status}`);
  for (let i = 0; i < 500 && (await ep.read(true)).ok === before; i++) await sleep(10);
  const samples: number[] = [];
  const take = async () => void samples.push(...(await ep.read(true)).latencies);
  const run = await publishEvery(api, topic, o, take, () => samples.length);
  await api.putSettings(topic, group, {});
  const path = ep.mode === "plain" ? "push plain" : "push handleCallback";
  return report(path, samples, run, log);
}

export async function pollLatency(
  api: GatewayApi,
  o: LatencyOptions,
  log: (line: string) => void,
): Promise<LatencyResult> {
  const topic = "bench-poll-latency";
  const group = "latency";
  if ((await api.publish(topic, o.payload)).status !== 201) throw new Error(`publish to ${topic}`);
  const samples: number[] = [];
  let polling = true;
  const poller = (async () => {
    for (let i = 0; i < 10_000_000 && polling; i++) {
      const res = await api.receive(topic, group).catch(() => null);
      if (!res || res.status !== 200) {
        await sleep(2);
        continue;
      }
      for (const part of parseMultipart(res.contentType, res.body)) {
        const ms = latencyOf(part.payload);
        if (ms !== null) samples.push(ms);
        await api.ack(topic, group, part.headers.get("vqs-receipt-handle") ?? "").catch(() => null);
      }
    }
  })();
  try {
    const run = await publishEvery(
      api,
      topic,
      o,
      async () => sleep(0),
      () => samples.length,
    );
    return report("poll receive 10 (2 ms pause)", samples, run, log);
  } finally {
    polling = false;
    await poller;
  }
}

interface PublishRun {
  readonly sent: number;
  readonly publishMs: number[];
  readonly busy: number;
  readonly steal: number;
}

/** Publishes `o.messages` stamped messages on a fixed schedule, then waits for them to arrive. */
async function publishEvery(
  api: GatewayApi,
  topic: string,
  o: LatencyOptions,
  collect: () => Promise<void>,
  received: () => number,
): Promise<PublishRun> {
  const m0 = sampleMachine();
  const t0 = performance.now();
  const publishMs: number[] = [];
  let sent = 0;
  for (let i = 0; i < o.messages; i++) {
    const wait = t0 + i * o.intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    const res = await api.publish(topic, stampNow(o.payload)).catch(() => null);
    publishMs.push(performance.now() - t);
    if (res?.status === 201) sent++;
    if (i % 25 === 0) await collect();
  }
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    await collect();
    if (received() >= sent || performance.now() > deadline) break;
    await sleep(20);
  }
  const m1 = sampleMachine();
  const seconds = (performance.now() - t0) / 1000;
  const pct = (k: "busySeconds" | "stealSeconds") =>
    m0 && m1 ? Math.round(((m1[k] - m0[k]) / seconds) * 100) : NaN;
  return { sent, publishMs, busy: pct("busySeconds"), steal: pct("stealSeconds") };
}

function report(
  path: LatencyResult["path"],
  samples: readonly number[],
  run: PublishRun,
  log: (line: string) => void,
): LatencyResult {
  const p = percentiles(samples);
  const r: LatencyResult = {
    path,
    sent: run.sent,
    received: samples.length,
    p50Ms: round(p.p50, 2),
    p99Ms: round(p.p99, 2),
    maxMs: round(p.max, 2),
    publishP50Ms: round(percentiles(run.publishMs).p50, 2),
    machineBusy: run.busy,
    steal: run.steal,
    loadAverage: loadAverage(),
  };
  log(
    `  latency ${path}: ${r.received}/${r.sent}, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms ` +
      `(publish p50 ${r.publishP50Ms} ms; machine busy ${r.machineBusy}%, steal ${r.steal}%, load ${r.loadAverage})`,
  );
  return r;
}

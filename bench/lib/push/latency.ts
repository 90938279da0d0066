// Publish-to-handler latency with an otherwise idle system: one message every `intervalMs`,
// published through the gateway's API with its send time in the payload (stamp.ts), to a fresh
// topic whose group is pushed to the plain endpoint (autoAck); the endpoint notes handler time −
// send time.
import type { GatewayApi } from "../gw.js";
import type { PushEndpoint } from "./endpoints.js";
import { stampNow } from "./stamp.js";
import { percentiles, round, sleep } from "../stats.js";

export interface LatencyResult {
  readonly sent: number;
  readonly received: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** Waiting for the last messages after the last publish, at most. */
const DRAIN_TIMEOUT_MS = 10_000;

export async function pushLatency(
  api: GatewayApi,
  ep: PushEndpoint,
  o: { messages: number; intervalMs: number; payload: Buffer },
): Promise<LatencyResult> {
  const topic = "bench-push-latency";
  const group = "latency";
  // The topic first (a probe message), then its push settings: the feed opens on a topic that exists.
  if ((await api.publish(topic, o.payload)).status !== 201) throw new Error(`publish to ${topic}`);
  const before = (await ep.read(true)).ok;
  const put = await api.putSettings(topic, group, { push: { url: ep.url, autoAck: true } });
  if (put.status !== 200) throw new Error(`PUT settings: HTTP ${put.status}`);
  for (let i = 0; i < 500 && (await ep.read(true)).ok === before; i++) await sleep(10);
  const samples: number[] = [];
  const take = async () => void samples.push(...(await ep.read(true)).latencies);
  const t0 = performance.now();
  let sent = 0;
  for (let i = 0; i < o.messages; i++) {
    const wait = t0 + i * o.intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    const res = await api.publish(topic, stampNow(o.payload)).catch(() => null);
    if (res?.status === 201) sent++;
    if (i % 25 === 0) await take();
  }
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    await take();
    if (samples.length >= sent || performance.now() > deadline) break;
    await sleep(20);
  }
  await api.putSettings(topic, group, {});
  const p = percentiles(samples);
  return {
    sent,
    received: samples.length,
    p50Ms: round(p.p50, 2),
    p99Ms: round(p.p99, 2),
    maxMs: round(p.max, 2),
  };
}

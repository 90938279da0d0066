// The push mode of `npm run bench:ab`: each gateway pushes its own topic's backlog to one plain
// endpoint (autoAck, `maxConcurrency` 64), one gateway at a time, in slices. The gateways run in
// regions of their own (bench1, bench2) on the one nats-server, since every gateway of a region
// pushes every pushed group of the region; a slice switches one group on through its gateway's
// settings API and the other off. Counted at the endpoint; CPU of the active gateway.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { GatewayApi } from "../gw.js";
import { sampleProc } from "../proc.js";
import type { PushEndpoint } from "./endpoints.js";
import { topicStream } from "../gw.js";
import { pushOff, pushOn } from "./throughput.js";
import { fillStream } from "../raw.js";
import { sleep } from "../stats.js";

export interface AbPushOptions {
  readonly apis: readonly [GatewayApi, GatewayApi];
  readonly pids: readonly [number, number];
  readonly endpoint: PushEndpoint;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly payload: Buffer;
  readonly slices: number;
  readonly sliceMs: number;
  readonly settleMs: number;
  readonly inFlight: number;
}

/** Rates (msg/s) and gateway CPU per message (µs) of each side's slices, in slice order. */
export async function abPushSlices(o: AbPushOptions): Promise<{
  rates: [number[], number[]];
  cpu: [number[], number[]];
}> {
  const topic = (i: number) => `ab-push-${i}`;
  // Enough for each side at 12,000 msg/s through its warm-up and its half of the slices (a
  // quiet machine pushes 10,000-12,000/s from the build; a side that runs dry gives no ratio).
  const perSide = Math.ceil(
    12_000 * ((o.slices / 2) * (o.sliceMs + o.settleMs + 1000) + 6000) * 1e-3,
  );
  for (const i of [0, 1] as const) {
    const s = await topicStream({ api: o.apis[i], jsm: o.jsm }, topic(i), o.payload);
    await fillStream(o.js, s, o.payload, perSide, 240, s.makeHeaders);
  }
  let on: 0 | 1 | null = null;
  const off = async () => {
    if (on !== null) await pushOff(o.apis[on], topic(on), "push", o.endpoint);
    on = null;
  };
  const switchTo = async (i: 0 | 1) => {
    if (on === i) return;
    await off();
    await pushOn(o.apis[i], topic(i), "push", o.endpoint, o.inFlight, true);
    on = i;
  };
  for (const i of [0, 1, 0, 1] as const) {
    await switchTo(i); // warm-up: V8 optimises the hot paths of both
    await sleep(1500);
  }
  const rates: [number[], number[]] = [[], []];
  const cpu: [number[], number[]] = [[], []];
  for (let s = 0; s < o.slices; s++) {
    const i = ([0, 1, 1, 0] as const)[s % 4] ?? 0;
    await switchTo(i);
    await sleep(o.settleMs);
    const a = await o.endpoint.read();
    const c0 = sampleProc(o.pids[i]);
    await sleep(o.sliceMs);
    const b = await o.endpoint.read();
    const c1 = sampleProc(o.pids[i]);
    const n = b.ok - a.ok;
    rates[i].push(n / ((b.at - a.at) / 1000));
    cpu[i].push(c0 && c1 && n > 0 ? ((c1.cpuSeconds - c0.cpuSeconds) / n) * 1e6 : NaN);
  }
  await off();
  return { rates, cpu };
}

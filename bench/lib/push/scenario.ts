// `npm run bench:push`'s scenario: the plain push endpoint in its own process, throughput in
// paired slices against polling (throughput.ts), then publish-to-handler latency (latency.ts);
// its table and targets.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GatewayApi } from "../gw.js";
import { startPushEndpoint } from "./endpoints.js";
import { pushLatency, type LatencyResult } from "./latency.js";
import { pushThroughput, type LevelResult } from "./throughput.js";
import type { Target } from "../report.js";

export interface PushContext {
  readonly api: GatewayApi;
  readonly gatewayPid: number;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Where the endpoint's log goes. */
  readonly logDir: string;
  readonly log: (line: string) => void;
}

export interface PushResult {
  readonly rounds: number;
  readonly sliceSeconds: number;
  readonly levels: readonly LevelResult[];
  readonly latency: LatencyResult;
}

export async function pushScenario(
  ctx: PushContext,
  o: { quick: boolean; levels: readonly number[] },
): Promise<PushResult> {
  const payload = randomBytes(1024);
  const rounds = o.quick ? 3 : 6;
  const sliceMs = o.quick ? 1200 : 2000;
  ctx.log(
    `push: ${o.levels.join("/")} in flight, ${rounds} rounds of 2 slices of ${sliceMs / 1000} s`,
  );
  const logFile = join(ctx.logDir, "push-endpoint-plain.log");
  await writeFile(logFile, "");
  const plain = await startPushEndpoint({ logFile });
  try {
    const levels = await pushThroughput(
      { ...ctx, plain },
      {
        levels: o.levels,
        rounds,
        sliceMs,
        settleMs: 400,
        warmupMs: o.quick ? 1500 : 3000,
        payload,
      },
    );
    const messages = o.quick ? 150 : 400;
    ctx.log(`push: latency, ${messages} messages 20 ms apart`);
    const latency = await pushLatency(ctx.api, plain, { messages, intervalMs: 20, payload });
    return { rounds, sliceSeconds: sliceMs / 1000, levels, latency };
  } finally {
    await plain.stop();
  }
}

/** The issue's targets: ≥ 10,000 pushes/s and ≥ 2× polled receive+ack, p50 < 10 ms. */
export function pushTargets(r: PushResult): Target[] {
  const at = (n: number) => r.levels.find((l) => l.concurrency === n);
  const out: Target[] = [];
  const l64 = at(64);
  out.push({
    name: "pushes/s to a plain endpoint, 64 in flight",
    target: ">= 10,000",
    value: l64?.plain.msgsPerSec ?? null,
    pass: l64 ? l64.plain.msgsPerSec >= 10_000 : null,
  });
  for (const n of [16, 64]) {
    const level = at(n);
    out.push({
      name: `push to a plain endpoint vs polled receive 10 + ack, ${n} in flight`,
      target: ">= 2x",
      value: level?.plainToPoll ?? null,
      pass: level ? level.plainToPoll >= 2 : null,
      ...(level ? {} : { note: "not run" }),
    });
  }
  out.push({
    name: "publish → plain push handler latency p50, ms",
    target: "< 10 ms",
    value: r.latency.p50Ms,
    pass: r.latency.p50Ms < 10,
  });
  return out;
}

/** The throughput and latency tables, Markdown. */
export function pushTables(r: PushResult): string {
  const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "n/a");
  const lines = [
    `Push, 1 KiB, median of ${r.rounds} paired rounds of ${r.sliceSeconds} s slices ` +
      `(ratio: median of the rounds' ratios; µs: gateway CPU per message)`,
    "",
    "| in flight | push plain msg/s | poll receive 10 + ack msg/s | plain / poll | gateway µs/msg plain / poll | errors | load average |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const l of r.levels) {
    lines.push(
      `| ${l.concurrency} | ${fmt(l.plain.msgsPerSec)} | ${fmt(l.poll.msgsPerSec)} | ` +
        `${l.plainToPoll.toFixed(2)} | ${fmt(l.plain.gatewayUsPerMsg)} / ${fmt(l.poll.gatewayUsPerMsg)} | ` +
        `${l.plain.errors + l.poll.errors} | ${l.loadAverage}${l.note ? ` (${l.note})` : ""} |`,
    );
  }
  const t = r.latency;
  lines.push(
    "",
    `Publish → plain handler latency: ${t.received} / ${t.sent} received, p50 ${t.p50Ms} ms, ` +
      `p99 ${t.p99Ms} ms, max ${t.maxMs} ms`,
  );
  return lines.join("\n");
}

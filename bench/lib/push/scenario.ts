// The push scenario group of `npm run bench` (and all of `npm run bench:push`): the two push
// endpoints in their own processes, throughput in paired slices against polling
// (throughput.ts), then publish-to-handler latency (latency.ts); its table and targets.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GatewayApi } from "../gw.js";
import { loadAverage } from "../proc.js";
import { startPushEndpoint, type PushEndpoint } from "./endpoints.js";
import { pollLatency, pushLatency, type LatencyResult } from "./latency.js";
import { pushThroughput, type LevelResult } from "./throughput.js";
import type { Target } from "../report.js";

export interface PushOptions {
  readonly quick: boolean;
  readonly levels: readonly number[];
}

export interface PushContext {
  readonly api: GatewayApi;
  /** The gateway the callback endpoint's client acknowledges through. */
  readonly gatewayUrl: string;
  readonly gatewayPids: readonly number[];
  readonly natsPid: number;
  readonly token: string;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Where the endpoints' logs go. */
  readonly logDir: string;
  readonly log: (line: string) => void;
}

export interface PushResult {
  readonly payloadBytes: number;
  readonly rounds: number;
  readonly sliceSeconds: number;
  readonly loadAverageAtStart: number;
  readonly levels: readonly LevelResult[];
  readonly latency: readonly LatencyResult[];
  readonly latencyIntervalMs: number;
}

export async function pushScenario(ctx: PushContext, o: PushOptions): Promise<PushResult> {
  const payload = randomBytes(1024);
  const rounds = o.quick ? 3 : 6;
  const sliceMs = o.quick ? 1200 : 2000;
  const latencyMessages = o.quick ? 150 : 400;
  const latencyIntervalMs = 20;
  const loadAverageAtStart = loadAverage();
  ctx.log(
    `push: endpoints; ${o.levels.join("/")} in flight, ${rounds} rounds of 3 slices of ${sliceMs / 1000} s each`,
  );
  const endpoints: PushEndpoint[] = [];
  try {
    for (const mode of ["plain", "callback"] as const) {
      const logFile = join(ctx.logDir, `push-endpoint-${mode}.log`);
      await writeFile(logFile, ""); // this run's lines only (the client logs failed callbacks)
      endpoints.push(
        await startPushEndpoint({ mode, gatewayUrl: ctx.gatewayUrl, token: ctx.token, logFile }),
      );
    }
    const [plain, callback] = endpoints as [PushEndpoint, PushEndpoint];
    const levels = await pushThroughput(
      { ...ctx, plain, callback },
      {
        levels: o.levels,
        rounds,
        sliceMs,
        settleMs: 400,
        warmupMs: o.quick ? 1500 : 3000,
        payload,
      },
    );
    ctx.log(`push: latency, ${latencyMessages} messages ${latencyIntervalMs} ms apart per path`);
    const lat = { messages: latencyMessages, intervalMs: latencyIntervalMs, payload };
    const latency = [
      await pushLatency(ctx.api, plain, lat, ctx.log),
      await pushLatency(ctx.api, callback, lat, ctx.log),
      await pollLatency(ctx.api, lat, ctx.log),
    ];
    return {
      payloadBytes: payload.length,
      rounds,
      sliceSeconds: sliceMs / 1000,
      loadAverageAtStart,
      levels,
      latency,
      latencyIntervalMs,
    };
  } finally {
    await Promise.all(endpoints.map((e) => e.stop()));
  }
}

/** The issue's targets: plain push ≥ 2× polled receive+ack (16 and 64 in flight), p50 < 10 ms. */
export function pushTargets(r: PushResult | null, note?: string): Target[] {
  const out: Target[] = [];
  for (const n of [16, 64]) {
    const level = r?.levels.find((l) => l.concurrency === n);
    out.push({
      name: `push to a plain endpoint vs polled receive 10 + ack, ${n} in flight`,
      target: ">= 2x",
      value: level?.ratio.plainToPoll ?? null,
      pass: level ? level.ratio.plainToPoll >= 2 : null,
      ...(level ? {} : { note: note ?? "not run" }),
    });
  }
  const plain = r?.latency.find((l) => l.path === "push plain");
  out.push({
    name: "publish → plain push handler latency p50, ms",
    target: "< 10 ms",
    value: plain?.p50Ms ?? null,
    pass: plain ? plain.p50Ms < 10 : null,
    ...(plain ? {} : { note: note ?? "not run" }),
  });
  return out;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "n/a";
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : String(n);
}

/** The throughput and latency tables, Markdown. */
export function pushTables(r: PushResult): string {
  const lines = [
    `Push, ${r.payloadBytes / 1024} KiB, median of ${r.rounds} paired rounds of ${r.sliceSeconds} s slices ` +
      `(ratios: median of the rounds' ratios; µs: CPU per message)`,
    "",
    "| in flight | push plain msg/s | push handleCallback msg/s | poll receive 10 + ack msg/s | plain / poll | handleCallback / poll | gateway µs/msg plain / callback / poll | endpoint µs/msg plain / callback; load generator (poll) | NATS µs/msg plain / callback / poll | machine busy / steal % |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const l of r.levels) {
    lines.push(
      `| ${l.concurrency} | ${fmt(l.plain.msgsPerSec)} | ${fmt(l.callback.msgsPerSec)} | ${fmt(l.poll.msgsPerSec)} | ` +
        `${l.ratio.plainToPoll.toFixed(2)} | ${l.ratio.callbackToPoll.toFixed(2)} | ` +
        `${fmt(l.plain.gatewayUsPerMsg)} / ${fmt(l.callback.gatewayUsPerMsg)} / ${fmt(l.poll.gatewayUsPerMsg)} | ` +
        `${fmt(l.plain.consumerUsPerMsg)} / ${fmt(l.callback.consumerUsPerMsg)}; ${fmt(l.poll.consumerUsPerMsg)} | ` +
        `${fmt(l.plain.natsUsPerMsg)} / ${fmt(l.callback.natsUsPerMsg)} / ${fmt(l.poll.natsUsPerMsg)} | ` +
        `${l.machineBusy} / ${l.steal}${l.note ? ` (${l.note})` : ""} |`,
    );
  }
  lines.push(
    "",
    "CPU of each process while each group ran, % of one core (2 cores = 200 %; the gateway is one " +
      "thread: near 100 % it is the limit):",
    "",
    "| in flight | group | msg/s | gateway % | endpoint % | NATS % | load generator % | machine busy % (all processes) | load average |",
    "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const l of r.levels) {
    for (const m of ["plain", "poll", "callback"] as const) {
      const c = l[m].cpuPercent;
      const endpoint = m === "poll" ? "–" : fmt(c.consumer);
      lines.push(
        `| ${l.concurrency} | ${m} | ${fmt(l[m].msgsPerSec)} | ${fmt(c.gateway)} | ${endpoint} | ` +
          `${fmt(c.nats)} | ${fmt(c.generator)} | ${fmt(c.machine)} | ${l.loadAverage} |`,
      );
    }
  }
  const errors = r.levels.flatMap((l) =>
    (["plain", "callback", "poll"] as const)
      .filter((m) => l[m].errors > 0)
      .map((m) => `${m} x${l.concurrency}: ${l[m].errors}`),
  );
  if (errors.length) lines.push("", `Errors (non-2xx pushes, failed acks): ${errors.join(", ")}`);
  lines.push(
    "",
    `Publish → handler latency, one message every ${r.latencyIntervalMs} ms:`,
    "",
    "| path | received | p50 ms | p99 ms | max ms | publish call p50 ms | machine busy / steal % | load average |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const l of r.latency) {
    lines.push(
      `| ${l.path} | ${l.received} / ${l.sent} | ${l.p50Ms} | ${l.p99Ms} | ${l.maxMs} | ${l.publishP50Ms} | ` +
        `${l.machineBusy} / ${l.steal} | ${l.loadAverage} |`,
    );
  }
  return lines.join("\n");
}

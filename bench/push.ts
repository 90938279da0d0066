// `npm run bench:push [-- --quick] [options]`: on its own nats-server and gateway process, push
// to a plain endpoint (in a process of its own) against polled receive 10 + ack, in paired slices
// (lib/push/throughput.ts), then publish-to-handler latency (lib/push/latency.ts). See
// bench/README.md. Never part of `npm test`; everything on 127.0.0.1, bounded.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { boundRun } from "./lib/proc.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { startPushEndpoint } from "./lib/push/endpoints.js";
import { pushLatency, type LatencyResult } from "./lib/push/latency.js";
import { pushThroughput, type LevelResult } from "./lib/push/throughput.js";
import { targetsTable, type Target } from "./lib/report.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH_DIR, "results");
const HELP = `npm run bench:push -- [options]
  --quick              shorter slices and fewer rounds (~2 min instead of ~5)
  --concurrency <list> push.maxConcurrency = polled receives in flight (default 1,16,64)
  --out <file>         results file (default bench/results/push.json)`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    concurrency: { type: "string", default: "1,16,64" },
    out: { type: "string", default: join(RESULTS, "push.json") },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const levels = values.concurrency.split(",").map((s) => Number(s.trim()));
if (levels.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) {
  throw new Error("--concurrency: integers from 1 to 1000 (push.maxConcurrency's bounds)");
}

interface PushResult {
  readonly rounds: number;
  readonly sliceSeconds: number;
  readonly levels: readonly LevelResult[];
  readonly latency: LatencyResult;
}

/** The issue's targets: ≥ 10,000 pushes/s and ≥ 2× polled receive+ack, p50 < 10 ms. */
function pushTargets(r: PushResult): Target[] {
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
function pushTables(r: PushResult): string {
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

const log = elapsedLog();
const servers = await benchServers("vqs-bench-push-");
const { root, issuer } = servers;
// The whole run is bounded, and a signal cleans up the processes it started.
const endTimeLimit = boundRun(servers.cleanup, (values.quick ? 8 : 20) * 60_000, log);

try {
  await mkdir(RESULTS, { recursive: true });
  const { nats, gateway } = await servers.start({
    natsStore: join(root, "store"),
    natsLog: join(RESULTS, "nats-server.log"),
    logFile: join(RESULTS, "gateway-1.log"),
  });
  const nc = await connect({ servers: nats.url, name: "vqs-bench-push" });
  const client = createHttpClient([gateway.url]);
  const startedAt = new Date();
  const machine = await machineInfo(nats);
  log(
    `vqs bench:push (${values.quick ? "quick" : "full"}): ${machine.cores} cores (${machine.cpuModel}), ` +
      `Node ${machine.node}, nats-server ${machine.nats}`,
  );
  const api = new GatewayApi(client, issuer.token);
  const payload = randomBytes(1024);
  const rounds = values.quick ? 3 : 6;
  const sliceMs = values.quick ? 1200 : 2000;
  log(`push: ${levels.join("/")} in flight, ${rounds} rounds of 2 slices of ${sliceMs / 1000} s`);
  const logFile = join(RESULTS, "push-endpoint-plain.log");
  await writeFile(logFile, "");
  const plain = await startPushEndpoint({ logFile });
  let result: PushResult;
  try {
    const ctx = {
      api,
      js: jetstream(nc),
      jsm: await jetstreamManager(nc),
      gatewayPid: gateway.pid,
    };
    const warmupMs = values.quick ? 1500 : 3000;
    const o = { levels, rounds, sliceMs, settleMs: 400, warmupMs, payload };
    const levelResults = await pushThroughput({ ...ctx, plain, log }, o);
    const messages = values.quick ? 150 : 400;
    log(`push: latency, ${messages} messages 20 ms apart`);
    const latency = await pushLatency(api, plain, { messages, intervalMs: 20, payload });
    result = { rounds, sliceSeconds: sliceMs / 1000, levels: levelResults, latency };
  } finally {
    await plain.stop();
  }
  client.close();
  await nc.close();
  const targets = pushTargets(result);
  const file = {
    tool: "vqs bench:push (bench/push.ts)",
    mode: values.quick ? "quick" : "full",
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    push: result,
    targets,
  };
  await mkdir(dirname(values.out), { recursive: true });
  await writeFile(values.out, JSON.stringify(file, null, 2) + "\n");
  process.stdout.write(
    [
      "",
      `vqs bench:push, ${file.mode} run, ${file.startedAt}: ${file.machine.cores} cores, Node ${file.machine.node}, nats-server ${file.machine.nats}`,
      "",
      pushTables(result),
      "",
      targetsTable(targets),
      "",
      `Results: ${relative(process.cwd(), values.out)}`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit();
  await servers.cleanup();
}

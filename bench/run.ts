// `npm run bench [-- --quick] [options]`: the gateway against raw JetStream, in one run, on one
// local nats-server (file storage), with the same payloads and concurrency. Push, the HTTP floor
// and BullMQ are bench:push, bench:floor and bench:bullmq. See bench/README.md.
// Never part of `npm test`. All traffic stays on 127.0.0.1; every loop is bounded in count and time.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { GatewayProcess } from "./lib/gateways.js";
import { GatewayApi, gwPublishOp, gwReceiveOp, topicStream, type TopicStream } from "./lib/gw.js";
import { createHttpClient, type HttpClient } from "./lib/http-client.js";
import type { BenchNats } from "./lib/nats-server.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import {
  createRawConsumer,
  createRawStream,
  fillStream,
  headersLike,
  rawPublishOp,
  rawReceiveOp,
  type RawStream,
  type ReceiveRecorders,
} from "./lib/raw.js";
import {
  markdownTable,
  row,
  sizeLabel,
  summarize,
  targetsTable,
  type RunResult,
  type ScenarioRow,
  type Target,
} from "./lib/report.js";
import { drive, type Processes, type Window } from "./lib/runner.js";
import { benchServers, elapsedLog, machineInfo, type BenchServers } from "./lib/standalone.js";
import { Recorder } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(BENCH_DIR);
/** Where gateway process i writes its log (warnings and errors only; *.log is git-ignored). */
const gatewayLog = (i: number) => join(BENCH_DIR, "results", `gateway-${i + 1}.log`);
const NATS_LOG = join(BENCH_DIR, "results", "nats-server.log");

const HELP = `npm run bench -- [options]
  --quick              short run (~2-3 min): 1.5 s per scenario
  --gateways <n>       gateway processes behind the load generator's round-robin (default 1)
  --duration <s>       measuring window per scenario (default 5, quick 1.5)
  --warmup <s>         warm-up before each window (default 1, quick 0.5)
  --sizes <list>       payload sizes in bytes (default 1024,65536)
  --concurrency <list> requests in flight (default 1,16,64,256)
  --out <file>         results file (default bench/results/latest.json)`;

interface Options {
  readonly quick: boolean;
  readonly gateways: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly sizes: readonly number[];
  readonly concurrency: readonly number[];
  readonly out: string;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      gateways: { type: "string", default: "1" },
      duration: { type: "string" },
      warmup: { type: "string" },
      sizes: { type: "string", default: "1024,65536" },
      concurrency: { type: "string", default: "1,16,64,256" },
      out: { type: "string", default: join(BENCH_DIR, "results", "latest.json") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const num = numberOption;
  const list = (name: string, raw: string, min: number, max: number) =>
    raw.split(",").map((s) => Math.round(num(name, s.trim(), min, max)));
  const quick = values.quick;
  return {
    quick,
    gateways: Math.round(num("gateways", values.gateways, 1, 8)),
    warmupMs: num("warmup", values.warmup ?? (quick ? "0.5" : "1"), 0, 60) * 1000,
    durationMs: num("duration", values.duration ?? (quick ? "1.5" : "5"), 0.2, 120) * 1000,
    sizes: list("sizes", values.sizes, 16, 1024 * 1024),
    concurrency: list("concurrency", values.concurrency, 1, 1024),
    out: values.out,
  };
}

const log = elapsedLog();

// ---------------------------------------------------------------------------------------------
// The environment: one nats-server, the gateway process(es), the load generator's connections.

interface Env {
  readonly nats: BenchNats;
  readonly gateways: readonly GatewayProcess[];
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly client: HttpClient;
  readonly api: GatewayApi;
  readonly procs: Processes;
}

async function startEnv(o: Options, servers: BenchServers): Promise<Env> {
  const gatewayStart = (i: number) => ({ logFile: gatewayLog(i) });
  const { nats, gateway } = await servers.start({
    natsStore: join(servers.root, "store"),
    natsLog: NATS_LOG,
    ...gatewayStart(0),
  });
  const gateways = [gateway];
  for (let i = 1; i < o.gateways; i++) gateways.push(await servers.startGateway(gatewayStart(i)));
  const nc = await connect({ servers: nats.url, name: "vqs-bench-raw", maxReconnectAttempts: 3 });
  servers.onCleanup(() => nc.close());
  const client = createHttpClient(gateways.map((g) => g.url));
  servers.onCleanup(() => client.close());
  return {
    nats,
    gateways,
    nc,
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    client,
    api: new GatewayApi(client, servers.issuer.token),
    procs: { gatewayPids: gateways.map((g) => g.pid), natsPid: nats.pid },
  };
}

/** nats-server's count of clients it disconnected as slow consumers. */
async function slowConsumers(env: Env): Promise<number> {
  const v = await env.nats.varz();
  return typeof v?.slow_consumers === "number" ? v.slow_consumers : NaN;
}

/** Runs `fn` and adds the slow consumers nats-server cut meanwhile to its result. */
async function counted<T extends RunResult>(env: Env, fn: () => Promise<T>): Promise<T> {
  const before = await slowConsumers(env);
  const result = await fn();
  const after = await slowConsumers(env);
  const slow = after - before;
  return {
    ...result,
    natsSlowConsumers: slow,
    ...(slow > 0 ? { limit: "NATS cut a connection (slow consumer)" } : {}),
  };
}

async function streamMessages(env: Env, stream: string): Promise<number> {
  return (await env.jsm.streams.info(stream)).state.messages;
}

/** Tops a stream up to `want` messages (a fresh consumer starts at its first message). */
async function ensureBacklog(
  env: Env,
  s: RawStream,
  payload: Buffer,
  want: number,
  makeHeaders: () => MsgHdrs,
  maxSeconds: number,
): Promise<number> {
  const have = await streamMessages(env, s.stream);
  if (have >= want) return have;
  const f = await fillStream(env.js, s, payload, want - have, maxSeconds, makeHeaders);
  log(
    `  backlog ${s.stream}: +${f.stored.toLocaleString("en-US")} in ${f.seconds.toFixed(1)} s` +
      (f.errors ? ` (${f.errors} publish errors)` : ""),
  );
  return have + f.stored;
}

async function deleteConsumers(env: Env, stream: string): Promise<void> {
  const names: string[] = [];
  for await (const c of env.jsm.consumers.list(stream)) {
    names.push(c.name);
    if (names.length > 10_000) break;
  }
  for (const n of names) await env.jsm.consumers.delete(stream, n).catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------
// Runs.

type Side = "raw" | "gateway";

async function publishRun(
  o: Options,
  env: Env,
  side: Side,
  target: TopicStream | RawStream,
  payload: Buffer,
  n: number,
): Promise<RunResult> {
  const rec = new Recorder();
  const op =
    side === "raw"
      ? rawPublishOp(env.js, target, payload, rec)
      : gwPublishOp(env.api, (target as TopicStream).topic, payload, rec);
  const { window, resources } = await drive(env.procs, n, o.warmupMs, o.durationMs, op);
  return summarize(window, resources, rec, rec, {
    gateways: env.gateways.length,
    side,
    concurrency: n,
  });
}

function receiveRecorders(): ReceiveRecorders {
  return { receive: new Recorder(), ack: new Recorder() };
}

let consumerCounter = 0;

async function receiveRun(
  o: Options,
  env: Env,
  side: Side,
  s: RawStream,
  topic: string | null,
  n: number,
): Promise<RunResult> {
  const r = receiveRecorders();
  const name = `bench_${side}_${++consumerCounter}`;
  let op: (w: number, window: Window) => Promise<void>;
  if (side === "raw") {
    await createRawConsumer(env.jsm, s, name);
    op = rawReceiveOp(env.nc, s.stream, name, r, "stop");
  } else {
    if (!topic) throw new Error("a gateway receive needs a topic");
    op = gwReceiveOp(env.api, topic, name, r, "stop");
  }
  const { window, resources } = await drive(env.procs, n, o.warmupMs, o.durationMs, op);
  await deleteConsumers(env, s.stream);
  return summarize(window, resources, r.receive, r.ack, {
    ack: r.ack,
    gateways: env.gateways.length,
    side,
    concurrency: n,
  });
}

function logRun(what: string, side: Side, r: RunResult): void {
  log(
    `  ${what} ${side.padEnd(7)} ${String(r.msgsPerSec).padStart(7)} msg/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms` +
      `  cpu gw ${r.cpu.gatewayCpu}% nats ${r.cpu.natsCpu}% client ${r.cpu.clientCpu}% other ${r.cpu.otherCpu}% steal ${r.cpu.stealCpu}%` +
      (r.errors ? `  errors ${r.errors} ${JSON.stringify(r.errorKinds ?? {})}` : "") +
      (r.natsSlowConsumers ? `  NATS slow consumers ${r.natsSlowConsumers}` : "") +
      (r.stoppedEarly ? `  (${r.stoppedEarly} after ${r.seconds} s)` : ""),
  );
}

// ---------------------------------------------------------------------------------------------
// Scenario groups.

/**
 * Warms both sides up before anything is measured: V8 optimises the gateway's and the load
 * generator's hot paths only after thousands of calls (a gateway fresh from start was measured
 * at half its warm throughput, its compiler threads busy), and every scenario should meet code
 * in the same state. Publishes, receives and acks of both kinds, on throwaway streams.
 */
async function warmUp(o: Options, env: Env): Promise<void> {
  const seconds = o.quick ? 8 : 15;
  log(`warm-up: ${seconds} s of raw and gateway traffic`);
  const payload = randomBytes(1024);
  const topic = await topicStream(env, "bench-warmup", payload);
  const raw = await createRawStream(env.jsm, topic.config, "BENCH_WARMUP");
  await createRawConsumer(env.jsm, raw, "warmup");
  const sink = () => receiveRecorders();
  const pubRec = new Recorder();
  const ops = [
    rawPublishOp(env.js, raw, payload, pubRec),
    rawReceiveOp(env.nc, raw.stream, "warmup", sink(), 1),
    gwPublishOp(env.api, topic.topic, payload, pubRec),
    gwReceiveOp(env.api, topic.topic, "warmup", sink(), 1),
  ];
  // Raw traffic for the first third, then the gateway's (each side with both kinds of calls).
  await drive(env.procs, 16, 0, (seconds * 1000) / 3, (w, win) => ops[w % 2]!(w, win));
  await drive(env.procs, 16, 0, (seconds * 2000) / 3, (w, win) => ops[2 + (w % 2)]!(w, win));
  await env.jsm.streams.delete(raw.stream).catch(() => undefined);
  await env.jsm.streams.delete(topic.stream).catch(() => undefined);
}

async function mainScenarios(o: Options, env: Env): Promise<ScenarioRow[]> {
  const rows: ScenarioRow[] = [];
  const windowSeconds = (o.warmupMs + o.durationMs) / 1000;
  for (const size of o.sizes) {
    const payload = randomBytes(size);
    const label = `${Math.round(size / 1024)}k`;
    const topic = await topicStream(env, `bench-${label}`, payload);
    const raw = await createRawStream(env.jsm, topic.config, `BENCH_RAW_${label.toUpperCase()}`);
    const sz = sizeLabel(size);

    for (const n of o.concurrency) {
      const a = await counted(env, () => publishRun(o, env, "raw", raw, payload, n));
      logRun(`publish ${sz} x${n}`, "raw", a);
      const b = await counted(env, () => publishRun(o, env, "gateway", topic, payload, n));
      logRun(`publish ${sz} x${n}`, "gateway", b);
      rows.push(row("publish", size, n, a, b));
    }

    // Each receive run is a fresh consumer group from the stream's first message: the stream
    // must hold what the run can consume (the publish runs wrote most of it).
    const floor = Math.ceil((o.quick ? 20 : 60) * (1024 / Math.max(1024, size)) * 1000);
    // Until a receive run has been measured, the raw publish rate stands for what one consumes.
    let lastRate = Math.max(
      0,
      ...rows.filter((r) => r.sizeBytes === size).map((r) => r.raw.msgsPerSec),
    );
    for (const n of o.concurrency) {
      const want = (rate: number) => Math.max(floor, Math.ceil(rate * windowSeconds * 1.6));
      await ensureBacklog(env, raw, payload, want(lastRate * 1.5), headersLike(undefined), 120);
      const a = await counted(env, () => receiveRun(o, env, "raw", raw, null, n));
      logRun(`receive ${sz} x${n}`, "raw", a);
      lastRate = Math.max(lastRate, a.msgsPerSec);
      await ensureBacklog(env, topic, payload, want(lastRate), topic.makeHeaders, 120);
      const b = await counted(env, () => receiveRun(o, env, "gateway", topic, topic.topic, n));
      logRun(`receive ${sz} x${n}`, "gateway", b);
      rows.push(row("receive", size, n, a, b));
    }

    await env.jsm.streams.delete(raw.stream).catch(() => undefined);
    await env.jsm.streams.delete(topic.stream).catch(() => undefined);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Targets (the issue's, as ratios within this run).

function targets(rows: readonly ScenarioRow[], o: Options): Target[] {
  const out: Target[] = [];
  for (const size of o.sizes) {
    const at = (kind: ScenarioRow["kind"]) =>
      rows.find((r) => r.kind === kind && r.sizeBytes === size && r.concurrency === 64);
    const pub = at("publish");
    const recv = at("receive");
    const sz = sizeLabel(size);
    out.push({
      name: `publish throughput, ${sz}, 64 in flight`,
      target: ">= 0.5x raw",
      value: pub?.ratio.throughput ?? null,
      pass: pub ? pub.ratio.throughput >= 0.5 : null,
    });
    out.push({
      name: `receive+ack throughput, ${sz}, 64 in flight`,
      target: ">= 0.5x raw",
      value: recv?.ratio.throughput ?? null,
      pass: recv ? recv.ratio.throughput >= 0.5 : null,
    });
    out.push({
      name: `publish p99 latency, ${sz}, 64 in flight`,
      target: "<= 3x raw",
      value: pub?.ratio.p99 ?? null,
      pass: pub ? pub.ratio.p99 <= 3 : null,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions();
  const servers = await benchServers("vqs-bench-");
  // The whole run is bounded: a hung scenario cannot keep the machine busy.
  const endTimeLimit = boundRun(servers.cleanup, (o.quick ? 8 : 20) * 60_000, log);
  const startedAt = new Date();
  await mkdir(join(BENCH_DIR, "results"), { recursive: true });
  for (let i = 0; i < o.gateways; i++) await writeFile(gatewayLog(i), "");
  await writeFile(NATS_LOG, "");
  try {
    log(`vqs bench (${o.quick ? "quick" : "full"}): ${o.gateways} gateway process(es)`);
    const env = await startEnv(o, servers);
    const machine = await machineInfo(env.nats);
    log(
      `machine: ${machine.cores} cores (${machine.cpuModel}), Node ${machine.node}, nats-server ${machine.nats}; load average ${machine.loadAverageAtStart}`,
    );
    await warmUp(o, env);
    const rows = await mainScenarios(o, env);
    const t = targets(rows, o);
    const results = {
      tool: "vqs bench (bench/run.ts)",
      mode: o.quick ? "quick" : "full",
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      options: {
        gateways: o.gateways,
        warmupSeconds: o.warmupMs / 1000,
        durationSeconds: o.durationMs / 1000,
        sizes: o.sizes,
        concurrency: o.concurrency,
      },
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      scenarios: rows,
      targets: t,
    };
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, JSON.stringify(results, null, 2) + "\n");
    const logLines = await Promise.all(
      Array.from({ length: o.gateways }, (_, i) =>
        readFile(gatewayLog(i), "utf8").then(
          (t) => t.split("\n").filter(Boolean).length,
          () => 0,
        ),
      ),
    );
    const out: string[] = [
      "",
      `vqs bench, ${results.mode} run, ${startedAt.toISOString()}: ${machine.cores} cores (${machine.cpuModel}), ` +
        `Node ${machine.node}, nats-server ${machine.nats}, ${o.gateways} gateway process(es), ` +
        `${o.durationMs / 1000} s per scenario after ${o.warmupMs / 1000} s warm-up`,
      "",
      markdownTable(rows),
      "",
      ...(rows.some((r) => r.raw.stoppedEarly || r.gateway.stoppedEarly)
        ? ["* the run stopped early (its backlog ran out); the rate is over the time it ran.", ""]
        : []),
      "Targets (ratios within this run):",
      "",
      targetsTable(t),
      "",
      `Results: ${relative(REPO_DIR, o.out)}; gateway log lines (warnings and errors): ` +
        logLines.map((n, i) => `${n} in ${relative(REPO_DIR, gatewayLog(i))}`).join(", "),
      "",
    ];
    process.stdout.write(out.join("\n"));
  } finally {
    endTimeLimit();
    await servers.cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

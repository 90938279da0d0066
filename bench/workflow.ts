// `npm run bench:workflow [-- --runs 200 --steps 10]`: the same Workflow DevKit app and workflow
// (`sequence`: N steps one after another) on world-postgres's own queue (graphile-worker polling
// Postgres) and on vqs (the World of examples/workflow: world-vercel's queue through a gateway,
// world-postgres's storage), with the same Postgres cluster (a database each), on this machine,
// in one run. Reports runs completed per second, the latency from one step's start to the next
// step's start (p50/p99), and the CPU of every process. Never part of `npm test`; everything on
// 127.0.0.1.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "../src/dev/nats-server-process.js";
import { AUDIENCE, ISSUER, startIssuer } from "../test/helpers/issuer.js";
import { startTestNats } from "../test/helpers/processes/nats.js";
import { startTestPostgres, type TestPostgres } from "../test/helpers/processes/postgres.js";
import {
  buildExampleApp,
  migrateWorldPostgres,
  startWorkflowApp,
  type WorkflowApp,
} from "../test/helpers/workflow-app.js";
import { benchGatewayEnv, startGatewayProcess } from "./lib/gateways.js";
import { loadAverage, sampleProc } from "./lib/proc.js";
import { percentiles, round, sleep } from "./lib/stats.js";

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), "results");
const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "200" },
    steps: { type: "string", default: "10" },
    concurrency: { type: "string", default: "50" },
    out: { type: "string", default: join(RESULTS, "workflow.json") },
    // App processes on each queue (the example server's WORKFLOW_APP_PROCESSES), sharing the
    // concurrency: graphile-worker's pool is split between them, vqs's namespace cap is theirs.
    apps: { type: "string", default: "1" },
    // Which queue's phase runs first: world-postgres (the default) or vqs.
    order: { type: "string", default: "world-postgres-first" },
  },
});
const RUNS = Number(values.runs);
const STEPS = Number(values.steps);
const CONCURRENCY = Number(values.concurrency);
const APPS = Number(values.apps);
const ORDER = values.order;
if (ORDER !== "world-postgres-first" && ORDER !== "vqs-first") {
  throw new Error("--order must be world-postgres-first or vqs-first");
}

/** CPU seconds of a process and of its children (Postgres's backends), so far. */
function treeCpu(pid: number): number {
  let total = sampleProc(pid)?.cpuSeconds ?? 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) total += sampleProc(Number(entry))?.cpuSeconds ?? 0;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The process listening on a loopback TCP `port` (from `ss`, iproute2). */
function listenerPid(port: number): number {
  const r = spawnSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
  const m = /pid=(\d+)/.exec(r.stdout ?? "");
  if (!m) throw new Error(`no process found listening on port ${port} (is ss installed?)`);
  return Number(m[1]);
}

interface Result {
  readonly queue: string;
  readonly runs: number;
  readonly steps: number;
  readonly seconds: number;
  readonly runsPerSecond: number;
  readonly stepToStepMs: { p50: number; p99: number; max: number };
  /** CPU seconds per process over the whole measurement. */
  readonly cpuSeconds: Record<string, number>;
  readonly loadAverage: number;
}

async function measure(
  queue: string,
  app: WorkflowApp,
  pids: Record<string, number>,
): Promise<Result> {
  // One warm-up run: bundles loaded, connections open.
  await app.completed(await app.start("sequence", [`warm-${queue}`, 1]), 60_000);
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, treeCpu(pid)]));
  // This process too: it starts and watches the runs (and, on vqs, drains the gateway's log).
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  const ids = await Promise.all(
    Array.from({ length: RUNS }, (_, i) => app.start("sequence", [`${queue}-${i}`, STEPS])),
  );
  const pending = new Set(ids);
  const deadline = Date.now() + 600_000;
  while (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`${queue}: ${pending.size} runs not done in 10 min`);
    // A few status reads at a time, so that watching costs the app little.
    for (const id of [...pending].slice(0, 20)) {
      const state = await app.run(id);
      if (state.status === "completed") pending.delete(id);
      else if (state.status === "failed") throw new Error(`${queue}: run ${id} failed`);
    }
    if (pending.size > 0) await sleep(250);
  }
  const seconds = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const cpuSeconds = {
    ...Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => [k, round(treeCpu(pid) - cpu0[k]!)]),
    ),
    bench: round((self.user + self.system) / 1e6),
  };
  const gaps: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const starts: number[] = [];
    for (let s = 0; s < STEPS; s++)
      starts.push(...(await app.stepTimes(`${queue}-${i}`, `add${s}`)).slice(0, 1));
    for (let s = 1; s < starts.length; s++) gaps.push(starts[s]! - starts[s - 1]!);
  }
  const p = percentiles(gaps);
  return {
    queue,
    runs: RUNS,
    steps: STEPS,
    seconds: round(seconds),
    runsPerSecond: round(RUNS / seconds),
    stepToStepMs: { p50: round(p.p50), p99: round(p.p99), max: round(p.max) },
    cpuSeconds,
    loadAverage: round(loadAverage()),
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);
let pg: TestPostgres | null = null;
const apps: WorkflowApp[] = [];
const cleanups: (() => Promise<void>)[] = [];
try {
  log("building the example app and starting Postgres, nats-server and a gateway...");
  await buildExampleApp();
  const postgres = await startTestPostgres();
  pg = postgres;
  const [nats, issuer] = await Promise.all([startTestNats(), startIssuer()]);
  cleanups.push(
    () => nats.dispose(),
    () => issuer.close(),
  );
  const gateway = await startGatewayProcess({
    env: benchGatewayEnv(nats.url, issuer.jwksUrl, ISSUER, AUDIENCE, {
      VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1:*",
      // The region the example app's push verifier expects by default (urn:vqs:iad1).
      VQS_REGION: "iad1",
      LOG_LEVEL: "info",
    }),
    // The same concurrency as graphile-worker's pool: at most that many handlers at once in the
    // app, over all of its groups (each group's push.maxConcurrency alone would allow 11 × 50).
    options: { maxPushesInFlightPerNamespace: CONCURRENCY },
    logFile: join(RESULTS, "workflow-gateway.log"),
  });
  cleanups.unshift(() => gateway.stop());
  let base: Result;
  let ours: Result;
  const runBaseline = async (): Promise<Result> => {
    // world-postgres's own queue: graphile-worker in the app, POSTing to the app's own routes.
    const pgDb = postgres.createDatabase("wf_pgqueue");
    migrateWorldPostgres(pgDb);
    const port = await freePort();
    const baseline = await startWorkflowApp({
      gatewayUrl: gateway.url,
      token: await issuer.token(),
      deploymentId: "dpl_bench",
      postgresUrl: pgDb,
      port,
      env: {
        WORKFLOW_TARGET_WORLD: "@workflow/world-postgres",
        WORKFLOW_POSTGRES_WORKER_CONCURRENCY: String(Math.ceil(CONCURRENCY / APPS)),
        WORKFLOW_APP_PROCESSES: String(APPS),
      },
    });
    apps.push(baseline);
    log(`world-postgres queue: ${RUNS} runs of ${STEPS} steps...`);
    const base = await measure("world-postgres", baseline, {
      app: baseline.child.pid!,
      postgres: postgres.pid,
    });
    await baseline.stop();
    return base;
  };
  const runVqs = async (): Promise<Result> => {
    // vqs: the World of examples/workflow.
    const vqsDb = postgres.createDatabase("wf_vqs");
    migrateWorldPostgres(vqsDb);
    const app = await startWorkflowApp({
      gatewayUrl: gateway.url,
      token: await issuer.token(),
      deploymentId: "dpl_bench",
      postgresUrl: vqsDb,
      env: {
        VQS_WORKFLOW_MAX_CONCURRENCY: String(CONCURRENCY),
        WORKFLOW_APP_PROCESSES: String(APPS),
      },
    });
    apps.push(app);
    log(`vqs: ${RUNS} runs of ${STEPS} steps...`);
    const ours = await measure("vqs", app, {
      app: app.child.pid!,
      postgres: postgres.pid,
      gateway: gateway.pid,
      "nats-server": listenerPid(nats.port),
    });
    await app.stop();
    return ours;
  };
  // Each phase has its own app and database; which runs first is a choice (--order), so
  // that a machine whose load drifts can be measured both ways.
  if (ORDER === "vqs-first") {
    ours = await runVqs();
    base = await runBaseline();
  } else {
    base = await runBaseline();
    ours = await runVqs();
  }
  const results: Result[] = [base, ours];

  const summary = {
    at: new Date().toISOString(),
    runs: RUNS,
    steps: STEPS,
    concurrency: CONCURRENCY,
    appProcesses: APPS,
    order: ORDER,
    results,
    ratios: {
      runsPerSecond: round(ours.runsPerSecond / base.runsPerSecond),
      stepToStepP50: round(ours.stepToStepMs.p50 / base.stepToStepMs.p50),
      stepToStepP99: round(ours.stepToStepMs.p99 / base.stepToStepMs.p99),
    },
  };
  await mkdir(dirname(values.out), { recursive: true });
  await writeFile(values.out, `${JSON.stringify(summary, null, 2)}\n`);
  for (const r of results) {
    const cpu = Object.entries(r.cpuSeconds)
      // And as a share of one core over the run: 100 % is a process using a core throughout.
      .map(([k, v]) => `${k} ${v} s (${Math.round((v / r.seconds) * 100)} %)`)
      .join(", ");
    log(
      `${r.queue.padEnd(15)} ${r.runsPerSecond} runs/s (${r.seconds} s), step to step p50 ` +
        `${r.stepToStepMs.p50} ms p99 ${r.stepToStepMs.p99} ms; CPU ${cpu}; load ${r.loadAverage}`,
    );
  }
  log(
    `vqs / world-postgres: runs/s x${summary.ratios.runsPerSecond}, p50 x${summary.ratios.stepToStepP50}, p99 x${summary.ratios.stepToStepP99}`,
  );
  log(`written to ${values.out}`);
} finally {
  for (const a of apps) await a.stop().catch(() => undefined);
  // The gateway's graceful stop comes first among the clean-ups.
  for (const c of cleanups) await c().catch(() => undefined);
  await pg?.dispose();
}

// `npm run bench:workflow-runs [-- --runs 1000,2000]`: what the Workflow DevKit's one topic per
// run costs on a 3-node cluster (R3), against one shared topic keyed by run. Per-run: each run
// publishes to `__wkf_workflow_r<i>`, pushed by the pattern `__wkf_workflow_*` with
// `maxConcurrency: 1` (a stream and a consumer per run); shared: every run publishes to
// `__wkf_workflow` with its run in a header, the group keyed on it (`flowControl {key,
// concurrency: 1}`). Each layout and size on a fresh cluster and gateway, pushed to the plain
// endpoint (200, autoAck) under the same namespace cap. Per run: one message published, pushed
// and acknowledged (runs/s); idle CPU with the runs' groups pushed; then push off and a second
// message per run, so every run is live: servers' RSS, /varz mem, files, open files. Never part
// of `npm test`; everything on 127.0.0.1, bounded.
import { readdir, stat, writeFile, mkdir } from "node:fs/promises";
import { readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage, sampleProc } from "./lib/proc.js";
import { startPushEndpoint, type PushEndpoint } from "./lib/push/endpoints.js";
import { targetsTable, type Target } from "./lib/report.js";
import { benchServers, elapsedLog, machineInfo, type BenchServers } from "./lib/standalone.js";
import { round, sleep } from "./lib/stats.js";

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), "results");
const HELP = `npm run bench:workflow-runs -- [options]
  --runs <list>        live runs per measurement, comma-separated (default 1000)
  --in-flight <n>      the namespace's pushes in flight = the shared group's maxConcurrency (64)
  --publishers <n>     publishes in flight (default 32)
  --out <file>         results file (default bench/results/workflow-runs.json)`;

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "1000" },
    "in-flight": { type: "string", default: "64" },
    publishers: { type: "string", default: "32" },
    out: { type: "string", default: join(RESULTS, "workflow-runs.json") },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const SIZES = values.runs.split(",").map((s) => numberOption("runs", s.trim(), 1, 20_000));
const IN_FLIGHT = numberOption("in-flight", values["in-flight"], 1, 1000);
const PUBLISHERS = numberOption("publishers", values.publishers, 1, 1000);
const PHASE_MS = 15 * 60_000; // a phase that has not finished by then fails the run
const IDLE_MS = 6000;
const PAYLOAD = Buffer.alloc(256, 0x61);
const RUN_HEADER = "x-wkf-run";
const GROUP = "default";
type Layout = "perRun" | "shared";
const LAYOUTS: readonly Layout[] = ["perRun", "shared"];

const log = elapsedLog();
let current: BenchServers | null = null;
let machine: Awaited<ReturnType<typeof machineInfo>> | null = null;
const endTimeLimit = boundRun(async () => void (await current?.cleanup()), 90 * 60_000, log);

const total = (xs: number[]) =>
  round(
    xs.reduce((a, b) => a + b, 0),
    1,
  );

/** Files and their bytes under `dir`; one NATS removes meanwhile (a raft snapshot's) is skipped. */
async function filesUnder(dir: string): Promise<{ files: number; bytes: number }> {
  let [files, bytes] = [0, 0];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, e.name);
    const sub = e.isDirectory() ? await filesUnder(path) : null;
    const size = e.isFile() ? (await stat(path).catch(() => null))?.size : undefined;
    files += sub ? sub.files : size !== undefined ? 1 : 0;
    bytes += sub ? sub.bytes : (size ?? 0);
  }
  return { files, bytes };
}

/** Each node's and the gateway's memory, the nodes' files (count, bytes) and open files. */
async function footprint(s: BenchServers) {
  const nodes = await Promise.all(
    s.natsNodes.map(async (n) => {
      const { files, bytes } = await filesUnder(n.storeDir);
      const [varz, jsz] = [await n.varz(), await n.jsz()];
      return {
        rssMiB: round((sampleProc(n.pid)?.rssBytes ?? NaN) / 2 ** 20, 1),
        varzMemMiB: round(Number(varz?.mem) / 2 ** 20, 1),
        files,
        storeMiB: round(bytes / 2 ** 20, 1),
        openFiles: readdirSync(`/proc/${n.pid}/fd`).length,
        streams: Number(jsz?.streams),
        consumers: Number(jsz?.consumers),
      };
    }),
  );
  const sum = (f: (n: (typeof nodes)[number]) => number) => total(nodes.map(f));
  return {
    rssMiB: sum((n) => n.rssMiB),
    varzMemMiB: sum((n) => n.varzMemMiB),
    files: sum((n) => n.files),
    storeMiB: sum((n) => n.storeMiB),
    openFiles: sum((n) => n.openFiles),
    gatewayRssMiB: round((sampleProc(s.gateway?.pid ?? 0)?.rssBytes ?? NaN) / 2 ** 20, 1),
    nodes,
  };
}
type Footprint = Awaited<ReturnType<typeof footprint>>;

/** CPU (% of a core) of the nodes together and of the gateway over `ms` with nothing published. */
async function idleCpu(s: BenchServers, ms: number) {
  const pids = [...s.natsNodes.map((n) => n.pid), s.gateway?.pid ?? 0];
  const a = pids.map((p) => sampleProc(p)?.cpuSeconds ?? NaN);
  await sleep(ms);
  const pct = pids.map((p, i) => (((sampleProc(p)?.cpuSeconds ?? NaN) - a[i]!) / ms) * 1e5);
  return {
    natsPct: total(pct.slice(0, -1)),
    gatewayPct: total(pct.slice(-1)),
  };
}

/** One message for each of `runs` runs, PUBLISHERS at a time; a 429/5xx is retried for 60 s. */
async function publishRuns(api: GatewayApi, layout: Layout, runs: number) {
  let next = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: PUBLISHERS }, async () => {
      for (let i = next++; i < runs; i = next++) {
        const topic = layout === "perRun" ? `__wkf_workflow_r${i}` : "__wkf_workflow";
        for (let attempt = 0; ; attempt++) {
          const res = await api
            .publish(topic, PAYLOAD, { [RUN_HEADER]: `r${i}` })
            .catch(() => null);
          if (res?.status === 201) break;
          if (attempt === 30)
            throw new Error(`publish to ${topic}: HTTP ${res?.status ?? "error"}`);
          errors++;
          await sleep(Math.min(2000, 200 * (attempt + 1)));
        }
      }
    }),
  );
  return errors;
}

/** Waits until the endpoint has answered `n` pushes since `from`; the seconds from `t0`. */
async function pushed(ep: PushEndpoint, from: number, n: number, t0: number, what: string) {
  const deadline = performance.now() + PHASE_MS;
  for (let seen = 0; ; await sleep(25)) {
    const r = await ep.read();
    if (r.ok - from >= n) return (performance.now() - t0) / 1000;
    if (performance.now() > deadline) throw new Error(`${what}: ${seen} of ${n} pushed in time`);
    seen = r.ok - from;
  }
}

async function measure(layout: Layout, runs: number) {
  const s = (current = await benchServers("vqs-bench-wkf-runs-"));
  try {
    const { nats, gateway } = await s.start({
      natsStore: join(s.root, "store"),
      natsLog: join(RESULTS, "nats-server.log"),
      natsNodes: 3,
      logFile: join(RESULTS, "gateway-1.log"),
      env: {
        VQS_STREAM_REPLICAS: "3",
        VQS_LARGE_BODY_STORE_BYTES: String(256 * 2 ** 20),
        maxPushesInFlightPerNamespace: String(IN_FLIGHT),
        // A run's topic settled by its first message would be swept 2 min later, before its
        // second makes it live again: kept, as a live run's topic is.
        settledTopicSeconds: "86400",
      },
    });
    machine ??= await machineInfo(nats);
    const client = createHttpClient([gateway.url]);
    s.onCleanup(() => client.close());
    const api = new GatewayApi(client, s.issuer.token);
    const ep = await startPushEndpoint({ logFile: join(RESULTS, "push-endpoint-plain.log") });
    s.onCleanup(() => ep.stop());
    const target = layout === "perRun" ? "__wkf_workflow_*" : "__wkf_workflow";
    const keyed = layout === "shared" ? { flowControl: { key: RUN_HEADER, concurrency: 1 } } : {};
    const put = async (body: unknown) => {
      const res = await api.putSettings(target, GROUP, body);
      if (res.status !== 200) throw new Error(`PUT ${target} settings: HTTP ${res.status}`);
    };
    const maxConcurrency = layout === "perRun" ? 1 : IN_FLIGHT;
    await put({ ...keyed, push: { url: ep.url, maxConcurrency, autoAck: true } });
    const idleBefore = await idleCpu(s, IDLE_MS);
    const before = await footprint(s);
    log(`${layout}, ${runs} runs: the nodes at ${before.rssMiB} MiB, ${before.files} files`);

    // Each run's first message: published, pushed, acknowledged.
    const from = (await ep.read()).ok;
    const t0 = performance.now();
    const errors = await publishRuns(api, layout, runs);
    const publishSeconds = (performance.now() - t0) / 1000;
    const seconds = await pushed(ep, from, runs, t0, `${layout} ${runs}`);
    log(`  ${round(runs / seconds, 1)} runs/s (published in ${round(publishSeconds, 1)} s)`);
    const idleAfter = await idleCpu(s, IDLE_MS);

    // Every run live: push off (groups and consumers stay), a second message per run.
    await put(keyed);
    for (let last = -1, now = (await ep.read()).ok; now !== last; await sleep(300)) {
      [last, now] = [now, (await ep.read()).ok];
    }
    await publishRuns(api, layout, runs);
    await sleep(2000); // replicas catch up; JetStream flushes its block files
    const live = await footprint(s);
    const per1k = (f: (x: Footprint) => number) => round(((f(live) - f(before)) * 1000) / runs, 1);
    const result = {
      layout,
      runs,
      runsPerSec: round(runs / seconds, 1),
      seconds: round(seconds, 1),
      publishSeconds: round(publishSeconds, 1),
      publishRetries: errors,
      per1kLiveRuns: {
        natsRssMiB: per1k((x) => x.rssMiB),
        natsVarzMemMiB: per1k((x) => x.varzMemMiB),
        natsFiles: per1k((x) => x.files),
        natsStoreMiB: per1k((x) => x.storeMiB),
        natsOpenFiles: per1k((x) => x.openFiles),
        gatewayRssMiB: per1k((x) => x.gatewayRssMiB),
        idleNatsCpuPct: round(((idleAfter.natsPct - idleBefore.natsPct) * 1000) / runs, 1),
        idleGatewayCpuPct: round(((idleAfter.gatewayPct - idleBefore.gatewayPct) * 1000) / runs, 1),
      },
      before,
      live,
      idleBefore,
      idleAfter,
      loadAverage: loadAverage(),
    };
    log(`  per 1,000 live runs: ${JSON.stringify(result.per1kLiveRuns)}`);
    return result;
  } finally {
    await s.cleanup();
    current = null;
  }
}

try {
  await mkdir(dirname(values.out), { recursive: true });
  const startedAt = new Date();
  const results: Awaited<ReturnType<typeof measure>>[] = [];
  /** A measurement that failed (e.g. the cluster stalled) is a finding: kept, the run goes on. */
  const failed: { layout: Layout; runs: number; error: string; loadAverage: number }[] = [];
  for (const runs of SIZES) {
    for (const layout of LAYOUTS) {
      try {
        results.push(await measure(layout, runs));
      } catch (err) {
        failed.push({ layout, runs, error: String(err), loadAverage: loadAverage() });
        log(`  ${layout}, ${runs} runs failed: ${String(err)}`);
      }
      // What is measured so far survives a run stopped later (replaced at the end).
      const partial = { partial: true, machine, results, failed };
      await writeFile(values.out, JSON.stringify(partial, null, 2));
    }
  }
  const at = (l: Layout, n: number) => results.find((r) => r.layout === l && r.runs === n)!;
  const both = SIZES.filter((n) =>
    LAYOUTS.every((l) => results.some((r) => r.layout === l && r.runs === n)),
  );
  const ratios = both.map((n) => {
    const [p, sh] = [at("perRun", n).per1kLiveRuns, at("shared", n).per1kLiveRuns];
    const q = (a: number, b: number) => round(a / b, 3);
    return {
      runs: n,
      natsRss: q(sh.natsRssMiB, p.natsRssMiB),
      natsVarzMem: q(sh.natsVarzMemMiB, p.natsVarzMemMiB),
      natsFiles: q(sh.natsFiles, p.natsFiles),
      runsPerSec: q(at("shared", n).runsPerSec, at("perRun", n).runsPerSec),
    };
  });
  const r0 = ratios[0]; // the first size both layouts finished
  const t = (name: string, want: string, v: number | undefined, ok: (v: number) => boolean) =>
    ({
      name: `shared ÷ per-run ${name} (${r0?.runs ?? SIZES[0]} runs)`,
      target: want,
      value: v ?? null,
      pass: v === undefined ? null : ok(v),
    }) satisfies Target;
  const targets = [
    t("NATS RSS per 1,000 live runs", "≤ 0.5", r0?.natsRss, (v) => v <= 0.5),
    t("NATS files per 1,000 live runs", "≤ 0.5", r0?.natsFiles, (v) => v <= 0.5),
    t("runs/s", "≥ 1", r0?.runsPerSec, (v) => v >= 1),
  ];
  const file = {
    tool: "vqs bench:workflow-runs (bench/workflow-runs.ts)",
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    loadAverageAtEnd: loadAverage(),
    inFlight: IN_FLIGHT,
    publishers: PUBLISHERS,
    results,
    failed,
    ratios,
    targets,
  };
  await writeFile(values.out, JSON.stringify(file, null, 2) + "\n");
  const line = (r: (typeof results)[number]) => {
    const k = r.per1kLiveRuns;
    return `| ${r.layout} | ${r.runs} | ${r.runsPerSec} | ${k.natsRssMiB} | ${k.natsVarzMemMiB} | ${k.natsFiles} | ${k.natsOpenFiles} | ${k.natsStoreMiB} | ${k.gatewayRssMiB} | ${k.idleNatsCpuPct} / ${k.idleGatewayCpuPct} | ${r.loadAverage} |`;
  };
  process.stdout.write(
    [
      "",
      `vqs bench:workflow-runs, ${file.startedAt}: 3 nodes (R3), ${IN_FLIGHT} pushes in flight, load ${file.loadAverageAtEnd}`,
      "",
      "Per 1,000 live runs (NATS: the three nodes together):",
      "",
      "| layout | runs | runs/s | NATS RSS MiB | /varz mem MiB | files | open files | store MiB | gateway RSS MiB | idle CPU % NATS / gateway | load |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...results.map(line),
      "",
      ...failed.map(
        (f) => `${f.layout}, ${f.runs} runs: failed at load ${f.loadAverage}: ${f.error}`,
      ),
      ...ratios.map(
        (r) =>
          `${r.runs} runs, shared ÷ per-run: RSS ${r.natsRss}×, /varz mem ${r.natsVarzMem}×, files ${r.natsFiles}×, runs/s ${r.runsPerSec}×`,
      ),
      "",
      targetsTable(targets),
      "",
      `Results: ${relative(process.cwd(), values.out)}`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit(); // each measurement cleans up after itself
}

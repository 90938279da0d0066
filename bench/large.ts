// `npm run bench:large [-- options]`: bodies of 100 MB through the gateway against raw JetStream
// chunk publishes and chunk reads of the same bytes, in one run on one nats-server: upload and
// download MB/s, the gateway's memory per concurrent large transfer, and small-message publish
// latency while large uploads run. See bench/README.md ("Large bodies"). Never part of
// `npm test`; everything on 127.0.0.1; every loop bounded in count and time.
import { jetstream, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { GatewayProcess } from "./lib/gateways.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient, type HttpClient } from "./lib/http-client.js";
import { batchLine, batchScenario, batchTarget } from "./lib/large/batch.js";
import {
  createChunkStream,
  downloadChunks,
  removeChunks,
  uploadChunks,
  type ChunkOptions,
  type ChunkStream,
} from "./lib/large/chunks.js";
import { settle, type Settled } from "./lib/large/settle.js";
import { slope, watchMemory, watchRss } from "./lib/large/memory.js";
import { findBodyStore } from "./lib/large/body-store.js";
import { startSmallPublisher, type SmallPublisher } from "./lib/large/publisher.js";
import { acknowledge, downloadBody, uploadBody, type GatewayTarget } from "./lib/large/transfer.js";
import type { BenchNats } from "./lib/nats-server.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage, sampleProc } from "./lib/proc.js";
import { targetsTable, type Target } from "./lib/report.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import type { Recorder } from "./lib/stats.js";
import { median, percentiles, round, sleep } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(BENCH_DIR);
const RESULTS = join(BENCH_DIR, "results");
const MB = 1_000_000;
const MiB = 1024 * 1024;

const HELP = `npm run bench:large -- [options]
  --size-mb <n>         body size in MB of 10^6 bytes (default 100)
  --rounds <n>          paired raw/gateway rounds of upload and download (default 3)
  --concurrency <list>  concurrent transfers of the memory scenario (default 1,2,4)
  --memory-repeats <n>  fresh-gateway runs of each memory level; slopes over their medians
                        (default 1; 3 for a figure to quote)
  --small-rate <n>      small publishes a second in the latency scenario (default 100)
  --small-seconds <s>   each latency phase's length (default 10)
  --gateway-env K=V,..  extra settings of the gateway: VARIABLE=v, or a fixed value by its Config field (largeBodyWindow=2)
  --settle-seconds <s>  before each scenario, sync and wait up to s for nats-server and the
                        gateway to go idle, reported (default 30; 0: no settling)
  --only <list>         scenarios to run, of throughput,memory,latency,batch (default all)
  --quick               --rounds 1, --small-seconds 5 (a check that everything runs)
  --out <file>          results file (default bench/results/large.json)`;

const SCENARIOS = ["throughput", "memory", "latency", "batch"];
const MEMORY_KINDS = ["upload", "download"] as const;
/** The baseline's publishes in flight and chunks read ahead: the gateway's (largeBodyWindow). */
const BASELINE_WINDOW = 8;
/** Concurrent large uploads in the latency scenario's loaded phase. */
const LOADERS = 4;

interface Options {
  readonly sizeBytes: number;
  readonly rounds: number;
  readonly concurrency: readonly number[];
  readonly memoryRepeats: number;
  readonly smallRate: number;
  readonly smallSeconds: number;
  readonly gatewayEnv: Record<string, string>;
  readonly only: ReadonlySet<string>;
  readonly quick: boolean;
  readonly settleSeconds: number;
  readonly out: string;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      "size-mb": { type: "string", default: "100" },
      rounds: { type: "string" },
      concurrency: { type: "string", default: "1,2,4" },
      "memory-repeats": { type: "string", default: "1" },
      "small-rate": { type: "string", default: "100" },
      "small-seconds": { type: "string" },
      "gateway-env": { type: "string", default: "" },
      only: { type: "string", default: SCENARIOS.join(",") },
      quick: { type: "boolean", default: false },
      "settle-seconds": { type: "string", default: "30" },
      out: { type: "string", default: join(RESULTS, "large.json") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const num = numberOption;
  const envOption = (name: string, text: string) => {
    const env: Record<string, string> = {};
    for (const pair of text.split(",").filter(Boolean)) {
      const eq = pair.indexOf("=");
      if (eq < 1) throw new Error(`--${name}: "${pair}" is not KEY=VALUE`);
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    return env;
  };
  const gatewayEnv = envOption("gateway-env", values["gateway-env"]);
  const quick = values.quick;
  const only = new Set(values.only.split(",").map((s) => s.trim()));
  for (const s of only) {
    if (!SCENARIOS.includes(s)) throw new Error(`--only: "${s}" is none of ${SCENARIOS.join(",")}`);
  }
  return {
    sizeBytes: Math.round(num("size-mb", values["size-mb"], 0.001, 1000) * MB),
    rounds: Math.round(num("rounds", values.rounds ?? (quick ? "1" : "3"), 1, 20)),
    concurrency: values.concurrency
      .split(",")
      .map((s) => Math.round(num("concurrency", s.trim(), 1, 16))),
    memoryRepeats: Math.round(num("memory-repeats", values["memory-repeats"], 1, 9)),
    smallRate: num("small-rate", values["small-rate"], 1, 2000),
    smallSeconds: num("small-seconds", values["small-seconds"] ?? (quick ? "5" : "10"), 1, 120),
    gatewayEnv,
    only,
    quick,
    settleSeconds: num("settle-seconds", values["settle-seconds"], 0, 600),
    out: values.out,
  };
}

const started = performance.now();
const log = elapsedLog();

interface Env {
  readonly nats: BenchNats;
  readonly gateway: GatewayProcess;
  readonly nc: NatsConnection;
  readonly target: GatewayTarget;
  readonly client: HttpClient;
  readonly api: GatewayApi;
  /** The timed small publishes' process (bench/large-publisher-process.ts). */
  readonly publisher: SmallPublisher;
  /** Another gateway like `gateway` (the memory levels get one each); the caller stops it. */
  readonly startGateway: (extra?: Record<string, string>) => Promise<GatewayProcess>;
}

const mbps = (bytes: number, ms: number) => round(bytes / MB / (ms / 1000), 1);

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}

/** `fn`'s CPU seconds in the gateway and in this process (the client), as it ran. */
async function charged<T>(
  gatewayPid: number,
  into: Record<string, { gateway: number; client: number }>,
  key: string,
  fn: () => Promise<T>,
): Promise<T> {
  const g0 = sampleProc(gatewayPid);
  const c0 = sampleProc("self");
  const value = await fn();
  const g1 = sampleProc(gatewayPid);
  const c1 = sampleProc("self");
  into[key] = {
    gateway: g0 && g1 ? round(g1.cpuSeconds - g0.cpuSeconds, 2) : NaN,
    client: c0 && c1 ? round(c1.cpuSeconds - c0.cpuSeconds, 2) : NaN,
  };
  return value;
}

// ---------------------------------------------------------------------------------------------
// Scenario 1: upload and download MB/s, raw and gateway in paired rounds.

interface RoundResult {
  readonly round: number;
  readonly rawUploadMBps: number;
  readonly gatewayUploadMBps: number;
  readonly rawDownloadMBps: number;
  readonly gatewayDownloadMBps: number;
  /** CPU seconds per body: the gateway's, and the load generator's (client) for each way. */
  readonly cpuSeconds: Record<string, { gateway: number; client: number }>;
}

async function throughput(
  o: Options,
  env: Env,
  cs: ChunkStream,
  chunk: ChunkOptions,
  body: Buffer,
  sha256: string,
): Promise<{ rounds: RoundResult[]; topics: string[] }> {
  const js = jetstream(env.nc);
  const jsm = await jetstreamManager(env.nc);
  const rounds: RoundResult[] = [];
  const topics: string[] = [];
  for (let r = 1; r <= o.rounds; r++) {
    const topic = `large-${r}`;
    topics.push(topic);
    const cpu: Record<string, { gateway: number; client: number }> = {};
    const pid = env.gateway.pid;
    const rawUp = async () =>
      (
        await charged(pid, cpu, "rawUpload", () =>
          timed(() => uploadChunks(js, cs, `r${r}`, body, chunk)),
        )
      ).ms;
    const gwUp = async () => {
      const { ms, value } = await charged(pid, cpu, "gatewayUpload", () =>
        timed(() => uploadBody(env.target, topic, body, { contentLength: true })),
      );
      if (value.status !== 201) {
        throw new Error(`gateway upload to ${topic}: HTTP ${value.status} ${value.body}`);
      }
      return ms;
    };
    const rawDown = async () => {
      const { ms, value } = await charged(pid, cpu, "rawDownload", () =>
        timed(() => downloadChunks(js, cs, `r${r}`, body.length, chunk)),
      );
      if (value.sha256 !== sha256) throw new Error("raw chunk read: SHA-256 differs");
      return ms;
    };
    const gwDown = async () => {
      const group = `dl-${r}`;
      const { ms, value } = await charged(pid, cpu, "gatewayDownload", () =>
        timed(() => downloadBody(env.target, topic, group)),
      );
      if (value.status !== 200 || value.sha256 !== sha256 || value.bytes !== body.length) {
        throw new Error(
          `gateway download of ${topic}: HTTP ${value.status}, ${value.bytes} bytes, ` +
            `${value.sha256 === sha256 ? "same" : "different"} SHA-256`,
        );
      }
      if (value.receiptHandle) await acknowledge(env.target, topic, group, value.receiptHandle);
      return ms;
    };
    // Alternate which side goes first, so a drift of the machine's speed favours neither.
    const gatewayFirst = r % 2 === 0;
    let rawUpMs: number, gwUpMs: number, rawDownMs: number, gwDownMs: number;
    if (gatewayFirst) {
      gwUpMs = await gwUp();
      rawUpMs = await rawUp();
    } else {
      rawUpMs = await rawUp();
      gwUpMs = await gwUp();
    }
    if (gatewayFirst) {
      gwDownMs = await gwDown();
      rawDownMs = await rawDown();
    } else {
      rawDownMs = await rawDown();
      gwDownMs = await gwDown();
    }
    await removeChunks(jsm, cs, `r${r}`);
    const res: RoundResult = {
      round: r,
      rawUploadMBps: mbps(body.length, rawUpMs),
      gatewayUploadMBps: mbps(body.length, gwUpMs),
      rawDownloadMBps: mbps(body.length, rawDownMs),
      gatewayDownloadMBps: mbps(body.length, gwDownMs),
      cpuSeconds: cpu,
    };
    log(
      `round ${r}: upload raw ${res.rawUploadMBps} / gateway ${res.gatewayUploadMBps} MB/s; ` +
        `download raw ${res.rawDownloadMBps} / gateway ${res.gatewayDownloadMBps} MB/s; ` +
        `CPU s gateway/client ` +
        Object.entries(cpu)
          .map(([k, v]) => `${k} ${v.gateway}/${v.client}`)
          .join(", "),
    );
    rounds.push(res);
  }
  return { rounds, topics };
}

// ---------------------------------------------------------------------------------------------
// Scenario 2: the gateway's resident memory with k large transfers at once.

interface MemoryLevel {
  readonly concurrency: number;
  readonly kind: "upload" | "download";
  /** RSS after a full GC, before the level's transfers. */
  readonly baselineMiB: number;
  /** The highest RSS seen (from /proc every 20 ms). */
  readonly peakMiB: number;
  readonly growthMiB: number;
  readonly perTransferMiB: number;
  /** The gateway's own process.memoryUsage() before (after a GC) and its peaks during the level. */
  readonly usageMiB: {
    readonly before: { heapUsed: number; external: number; arrayBuffers: number };
    readonly peak: {
      heapUsed: number;
      external: number;
      arrayBuffers: number;
      js: number;
      rss: number;
      readAheadChunks: number;
    };
    readonly samples: number;
  };
  readonly seconds: number;
}

async function memoryScenario(
  o: Options,
  env: Env,
  body: Buffer,
  sha256: string,
): Promise<{
  levels: MemoryLevel[];
  slopeMiB: { upload: number; download: number };
  liveSlopeMiB: { upload: number; download: number };
}> {
  // The body every download level receives (each download by a group of its own).
  const downloadTopic = "mem-download";
  const stored = await uploadBody(env.target, downloadTopic, body, {
    contentLength: true,
    retentionSeconds: 3600,
  });
  if (stored.status !== 201) throw new Error(`memory: HTTP ${stored.status} ${stored.body}`);
  const levels: MemoryLevel[] = [];
  const transfer = async (target: GatewayTarget, kind: "upload" | "download", name: string) => {
    if (kind === "upload") {
      const res = await uploadBody(target, name, body, {
        contentLength: true,
        retentionSeconds: 60,
      });
      if (res.status !== 201) throw new Error(`memory upload: HTTP ${res.status} ${res.body}`);
      return;
    }
    const res = await downloadBody(target, downloadTopic, name);
    if (res.status !== 200 || res.sha256 !== sha256) {
      throw new Error(`memory download: HTTP ${res.status}, ${res.bytes} bytes`);
    }
    if (res.receiptHandle) await acknowledge(target, downloadTopic, name, res.receiptHandle);
  };
  const mib = (bytes: number) => round(bytes / MiB, 1);
  for (const kind of MEMORY_KINDS) {
    for (const k of o.concurrency) {
      for (let r = 0; r < o.memoryRepeats; r++) {
        // A gateway of its own per level and pass, so no level starts from an earlier one's
        // high-water mark; one transfer first, so the code and the buffers of the path are warm.
        const gw = await env.startGateway();
        const tag = `${kind}-${k}-${r}`;
        try {
          const target: GatewayTarget = { ...env.target, url: gw.url };
          await transfer(target, kind, `mem-warm-${tag}`);
          // After a full GC, what the gateway holds with nothing running.
          const before = await gw.memory();
          await sleep(200);
          const baseline = sampleProc(gw.pid)?.rssBytes ?? NaN;
          const watch = watchRss(gw.pid);
          const usage = watchMemory(gw, {
            gc: true,
            everyMs: 100,
            metricsUrl: gw.metricsUrl,
          });
          const t0 = performance.now();
          await Promise.all(
            Array.from({ length: k }, (_, i) => transfer(target, kind, `mem-${tag}-${i}`)),
          );
          const seconds = (performance.now() - t0) / 1000;
          const peak = watch.stop();
          const used = await usage.stop();
          const level: MemoryLevel = {
            concurrency: k,
            kind,
            baselineMiB: mib(baseline),
            peakMiB: mib(peak),
            growthMiB: mib(peak - baseline),
            perTransferMiB: round((peak - baseline) / MiB / k, 2),
            usageMiB: {
              before: {
                heapUsed: mib(before?.heapUsed ?? NaN),
                external: mib(before?.external ?? NaN),
                arrayBuffers: mib(before?.arrayBuffers ?? NaN),
              },
              peak: {
                heapUsed: mib(used.heapUsed),
                external: mib(used.external),
                arrayBuffers: mib(used.arrayBuffers),
                js: mib(used.js),
                rss: mib(used.rss),
                readAheadChunks: used.readAheadChunks,
              },
              samples: used.samples,
            },
            seconds: round(seconds, 1),
          };
          log(
            `memory, ${k} ${kind}(s) at once (fresh gateway): RSS ${level.baselineMiB} ` +
              `-> peak ${level.peakMiB} MiB (+${level.growthMiB}); peaks heapUsed ` +
              `${level.usageMiB.peak.heapUsed}, external ${level.usageMiB.peak.external} ` +
              `(arrayBuffers ${level.usageMiB.peak.arrayBuffers}), heap+external ` +
              `${level.usageMiB.peak.js} MiB, read ahead ${used.readAheadChunks} chunks (before: ` +
              `${level.usageMiB.before.heapUsed} + ` +
              `${level.usageMiB.before.external}); ${used.samples} samples in ${level.seconds} s`,
          );
          levels.push(level);
        } finally {
          await gw.stop();
        }
        if (kind === "upload") {
          await purgeTopic(env, `mem-warm-${tag}`);
          for (let i = 0; i < k; i++) await purgeTopic(env, `mem-${tag}-${i}`);
        }
      }
    }
  }
  // Each level's figure is the median of its repeats (fresh gateways), the slope over those.
  // The target's figure is RSS with a full GC forced before each sample (bench/README.md says why).
  const slopeOf = (kind: "upload" | "download", y: (l: MemoryLevel) => number) =>
    round(
      slope(
        o.concurrency.map((k) => ({
          x: k,
          y: median(levels.filter((l) => l.kind === kind && l.concurrency === k).map(y)),
        })),
      ),
      2,
    );
  const rss = (l: MemoryLevel) => l.usageMiB.peak.rss;
  const live = (l: MemoryLevel) => l.usageMiB.peak.js;
  return {
    levels,
    slopeMiB: { upload: slopeOf("upload", rss), download: slopeOf("download", rss) },
    liveSlopeMiB: { upload: slopeOf("upload", live), download: slopeOf("download", live) },
  };
}

async function purgeTopic(env: Env, topic: string): Promise<void> {
  await env.client
    .request("DELETE", `/api/v3/topic/${topic}`, { authorization: `Bearer ${env.target.token}` })
    .catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------
// Scenario 3: small-message publish latency, idle and while large uploads run.

interface LatencyPhase {
  readonly phase: "idle" | "loaded" | "idle again";
  readonly published: number;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly largeUploads?: number;
  readonly largeMBps?: number;
}

/**
 * Publishes of 1 KiB at a fixed rate (open loop: a slow answer does not delay the next send),
 * from the small publisher's own process, to the gateway at `url`.
 */
async function smallPublishes(
  o: Options,
  env: Env,
  url: string,
  topic: string,
): Promise<{ recorder: Recorder; eventLoopDelayP99Ms: number }> {
  return env.publisher.run(url, env.target.token, topic, o.smallRate, o.smallSeconds);
}

async function latencyScenario(o: Options, env: Env, body: Buffer): Promise<LatencyPhase[]> {
  const phases: LatencyPhase[] = [];
  const summarize = (
    phase: LatencyPhase["phase"],
    rec: Recorder,
    extra: Partial<LatencyPhase> = {},
  ): LatencyPhase => {
    const p = percentiles(rec.samples);
    const r: LatencyPhase = {
      phase,
      published: rec.operations,
      errors: rec.errors,
      p50Ms: round(p.p50, 2),
      p99Ms: round(p.p99, 2),
      maxMs: round(p.max, 2),
      ...extra,
    };
    log(
      `small publishes, ${phase}: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms ` +
        `(${r.published} published, ${r.errors} errors)` +
        (extra.largeUploads !== undefined
          ? `; ${extra.largeUploads} large uploads at ${extra.largeMBps} MB/s in all`
          : ""),
    );
    return r;
  };
  const watched = async () => (await smallPublishes(o, env, env.gateway.url, "small")).recorder;
  // A first publish creates the topic, which is not what is measured; a short warm-up at the
  // same rate lets the gateway's code settle (JIT) before the idle phase.
  await env.api.publish("small", Buffer.from("x"));
  await smallPublishes(
    { ...o, smallSeconds: Math.min(2, o.smallSeconds) },
    env,
    env.gateway.url,
    "small",
  );
  phases.push(summarize("idle", await watched()));

  let stop = false;
  let uploads = 0;
  let uploadErrors = 0;
  const t0 = performance.now();
  const loaders = Array.from({ length: LOADERS }, async (_, w) => {
    for (let i = 0; !stop && i < 10_000; i++) {
      const res = await uploadBody(env.target, `load-${w}`, body, {
        contentLength: true,
        retentionSeconds: 60,
      }).catch(() => null);
      if (res?.status === 201) uploads++;
      else {
        uploadErrors++;
        await sleep(100);
      }
    }
  });
  // Let every loader get going before measuring.
  await sleep(1000);
  const loaded = await watched();
  stop = true;
  const loadSeconds = (performance.now() - t0) / 1000;
  await Promise.all(loaders);
  phases.push(
    summarize("loaded", loaded, {
      largeUploads: uploads,
      largeMBps: round((uploads * body.length) / MB / ((performance.now() - t0) / 1000), 1),
      ...(uploadErrors ? { errors: loaded.errors } : {}),
    }),
  );
  if (uploadErrors) log(`  ${uploadErrors} large uploads failed in ${loadSeconds.toFixed(0)} s`);
  for (let w = 0; w < LOADERS; w++) await purgeTopic(env, `load-${w}`);
  await sleep(1000);
  phases.push(summarize("idle again", await watched()));
  return phases;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions();
  const servers = await benchServers("vqs-bench-large-");
  const endTimeLimit = boundRun(servers.cleanup, (o.quick ? 10 : 30) * 60_000, log);
  try {
    await mkdir(RESULTS, { recursive: true });
    const gatewayLog = join(RESULTS, "large-gateway.log");
    await writeFile(gatewayLog, "");
    const gatewayStart = (extra: Record<string, string> = {}) => ({
      logFile: gatewayLog,
      env: { ...o.gatewayEnv, ...extra },
    });
    const { nats, gateway } = await servers.start({
      natsStore: join(servers.root, "store"),
      natsLog: join(RESULTS, "large-nats-server.log"),
      ...gatewayStart(),
    });
    const nc = await connect({ servers: nats.url, name: "vqs-bench-large" });
    servers.onCleanup(() => nc.close());
    const client = createHttpClient([gateway.url]);
    servers.onCleanup(() => client.close());
    const target: GatewayTarget = {
      url: gateway.url,
      token: servers.issuer.token,
      timeoutMs: 300_000,
    };
    const publisher = await startSmallPublisher();
    servers.onCleanup(() => publisher.stop());
    const env: Env = {
      nats,
      gateway,
      publisher,
      nc,
      target,
      client,
      api: new GatewayApi(client, servers.issuer.token),
      startGateway: (extra) => servers.startGateway(gatewayStart(extra)),
    };
    const machine = await machineInfo(nats);
    log(
      `vqs bench:large: ${o.sizeBytes / MB} MB bodies; ${machine.cores} cores, nats-server ` +
        `${machine.nats}; load average ${machine.loadAverageAtStart}`,
    );

    const body = randomBytes(o.sizeBytes);
    const sha256 = createHash("sha256").update(body).digest("hex");
    // The gateway's body store, once a body went through it: the baseline copies its stream
    // configuration and its chunk size, so both sides write the same way.
    const probe = await uploadBody(target, "large-probe", body, { contentLength: true });
    if (probe.status !== 201) {
      throw new Error(
        `the gateway refused a ${o.sizeBytes / MB} MB body: HTTP ${probe.status} ${probe.body} ` +
          "(does it take large bodies? see VQS_MAX_MESSAGE_BYTES)",
      );
    }
    const jsm = await jetstreamManager(nc);
    const store = await findBodyStore(jsm);
    const chunkBytes = store?.chunkBytes ?? MiB;
    log(
      store
        ? `gateway body store: stream ${store.stream}, chunks of ${store.chunkBytes} bytes`
        : "gateway body store not found (bodies inline?): the baseline uses a file stream",
    );
    const like: Partial<StreamConfig> | null = store?.config ?? null;
    const cs = await createChunkStream(jsm, "BENCH_LARGE", like);
    const chunk: ChunkOptions = { chunkBytes, window: BASELINE_WINDOW, timeoutMs: 120_000 };
    // Warm-up of the baseline's path too.
    await uploadChunks(jetstream(nc), cs, "warm", body, chunk);
    await downloadChunks(jetstream(nc), cs, "warm", body.length, chunk);
    await removeChunks(jsm, cs, "warm");

    // Each scenario starts from a settled machine; what settling took is reported.
    const settled: Record<string, Settled> = {};
    const settleBefore = async (scenario: string) => {
      if (o.settleSeconds <= 0) return;
      const s = await settle({ gateway: gateway.pid, "nats-server": nats.pid }, o.settleSeconds);
      settled[scenario] = s;
      log(
        `settled before ${scenario}: sync ${s.syncSeconds} s, then ${s.idleSeconds} s to ` +
          `${s.idle ? "idle" : "the limit (not idle)"}; CPU s ${JSON.stringify(s.cpuSeconds)}`,
      );
    };
    if (o.only.has("throughput")) await settleBefore("throughput");
    const tp = o.only.has("throughput")
      ? await throughput(o, env, cs, chunk, body, sha256)
      : { rounds: [], topics: [] };
    if (o.only.has("memory")) await settleBefore("memory");
    const mem = o.only.has("memory")
      ? await memoryScenario(o, env, body, sha256)
      : {
          levels: [],
          slopeMiB: { upload: NaN, download: NaN },
          liveSlopeMiB: { upload: NaN, download: NaN },
        };
    if (o.only.has("latency")) await settleBefore("latency");
    const latency = o.only.has("latency") ? await latencyScenario(o, env, body) : [];
    if (o.only.has("batch")) await settleBefore("batch");
    const batch = o.only.has("batch") ? await batchScenario(env, body, o.rounds, log) : null;

    const med = (f: (r: RoundResult) => number) => round(median(tp.rounds.map(f)), 1);
    const ratio = (a: (r: RoundResult) => number, b: (r: RoundResult) => number) =>
      round(median(tp.rounds.map((r) => a(r) / b(r))), 2);
    const summary = {
      rawUploadMBps: med((r) => r.rawUploadMBps),
      gatewayUploadMBps: med((r) => r.gatewayUploadMBps),
      rawDownloadMBps: med((r) => r.rawDownloadMBps),
      gatewayDownloadMBps: med((r) => r.gatewayDownloadMBps),
      uploadRatio: ratio(
        (r) => r.gatewayUploadMBps,
        (r) => r.rawUploadMBps,
      ),
      downloadRatio: ratio(
        (r) => r.gatewayDownloadMBps,
        (r) => r.rawDownloadMBps,
      ),
    };
    // CPU seconds per 100 MB body, median over the rounds, of each way's gateway and client.
    const cpuPerBody = Object.fromEntries(
      Object.keys(tp.rounds[0]?.cpuSeconds ?? {}).map((k) => [
        k,
        {
          gateway: round(median(tp.rounds.map((r) => r.cpuSeconds[k]?.gateway ?? NaN)), 2),
          client: round(median(tp.rounds.map((r) => r.cpuSeconds[k]?.client ?? NaN)), 2),
        },
      ]),
    );
    const p99Of = (phases: readonly LatencyPhase[]) => {
      const idle = phases.filter((p) => p.phase !== "loaded").map((p) => p.p99Ms);
      const idleP99 = round(idle.reduce((s, v) => s + v, 0) / idle.length, 2);
      const loadedP99 = phases.find((p) => p.phase === "loaded")?.p99Ms ?? NaN;
      return { idleP99, loadedP99, p99Ratio: round(loadedP99 / idleP99, 2) };
    };
    const { idleP99, loadedP99, p99Ratio } = p99Of(latency);
    const worstPerTransfer = (kind: "upload" | "download") =>
      Math.max(
        ...mem.levels.filter((l) => l.kind === kind).map((l) => l.perTransferMiB),
        -Infinity,
      );

    const throughputTargets: Target[] = [
      {
        name: `upload MB/s, ${o.sizeBytes / MB} MB, gateway vs raw chunk publishes`,
        target: ">= 0.5x raw",
        value: summary.uploadRatio,
        pass: summary.uploadRatio >= 0.5,
      },
      {
        name: `download MB/s, ${o.sizeBytes / MB} MB, gateway vs raw chunk reads`,
        target: ">= 0.5x raw",
        value: summary.downloadRatio,
        pass: summary.downloadRatio >= 0.5,
      },
    ];
    const memoryTargets: Target[] = [
      ...MEMORY_KINDS.map((kind): Target => {
        return {
          name:
            `gateway RSS per additional concurrent ${kind} (slope over ` +
            `${o.concurrency.join(", ")}; a full GC before each sample)`,
          target: "<= 4 MiB",
          value: mem.slopeMiB[kind],
          pass: mem.slopeMiB[kind] <= 4,
          note:
            `live heap+external ${mem.liveSlopeMiB[kind]} MiB; growth / transfers, worst ` +
            `level: ${worstPerTransfer(kind)} MiB`,
        };
      }),
    ];
    const latencyTargets: Target[] = [
      {
        name: `small publish p99 while ${LOADERS} large uploads run, vs idle`,
        target: "<= 2x idle",
        value: p99Ratio,
        pass: p99Ratio <= 2,
      },
    ];
    const targets = [
      ...(o.only.has("throughput") ? throughputTargets : []),
      ...(o.only.has("memory") ? memoryTargets : []),
      ...(o.only.has("latency") ? latencyTargets : []),
      ...(batch ? [batchTarget(batch)] : []),
    ];

    const results = {
      tool: "vqs bench:large (bench/large.ts)",
      mode: o.quick ? "quick" : "full",
      startedAt: new Date(Date.now() - (performance.now() - started)).toISOString(),
      finishedAt: new Date().toISOString(),
      options: {
        bodyBytes: o.sizeBytes,
        rounds: o.rounds,
        concurrency: o.concurrency,
        baselineChunkBytes: chunkBytes,
        baselineWindow: BASELINE_WINDOW,
        smallRate: o.smallRate,
        smallSeconds: o.smallSeconds,
        loaders: LOADERS,
        gatewayEnv: o.gatewayEnv,
      },
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      bodyStore: store ? { stream: store.stream, chunkBytes: store.chunkBytes } : null,
      throughput: { rounds: tp.rounds, ...summary, cpuSecondsPerBody: cpuPerBody },
      memory: mem,
      settled,
      smallPublishLatency: {
        phases: latency,
        idleP99Ms: idleP99,
        loadedP99Ms: loadedP99,
        p99Ratio,
      },
      batch,
      targets,
    };
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, JSON.stringify(results, null, 2) + "\n");

    const table = [
      "| | raw JetStream chunks | gateway | gateway / raw |",
      "| --- | ---: | ---: | ---: |",
      `| upload MB/s (Content-Length) | ${summary.rawUploadMBps} | ${summary.gatewayUploadMBps} | ${summary.uploadRatio} |`,
      `| download MB/s (multipart receive) | ${summary.rawDownloadMBps} | ${summary.gatewayDownloadMBps} | ${summary.downloadRatio} |`,
      "",
      "CPU seconds per body (median; gateway / load generator):",
      "",
      "| way | gateway | client |",
      "| --- | ---: | ---: |",
      ...Object.entries(cpuPerBody).map(([k, v]) => `| ${k} | ${v.gateway} | ${v.client} |`),
    ];
    const memTable = [
      "| transfers at once | kind | RSS before (MiB) | peak (MiB) | growth (MiB) | heapUsed before / peak | external before / peak | arrayBuffers peak | heap+external peak | seconds |",
      "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...mem.levels.map(
        (l) =>
          `| ${l.concurrency} | ${l.kind} | ` +
          `${l.baselineMiB} | ${l.peakMiB} | ${l.growthMiB} | ` +
          `${l.usageMiB.before.heapUsed} / ${l.usageMiB.peak.heapUsed} | ` +
          `${l.usageMiB.before.external} / ${l.usageMiB.peak.external} | ` +
          `${l.usageMiB.peak.arrayBuffers} | ${l.usageMiB.peak.js} | ${l.seconds} |`,
      ),
    ];
    const latTable = [
      "| phase | published | errors | p50 ms | p99 ms | max ms | large uploads |",
      "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
      ...latency.map(
        (p) =>
          `| ${p.phase} | ${p.published} | ${p.errors} | ${p.p50Ms} | ${p.p99Ms} | ${p.maxMs} | ` +
          `${p.largeUploads !== undefined ? `${p.largeUploads} (${p.largeMBps} MB/s)` : ""} |`,
      ),
    ];
    process.stdout.write(
      [
        "",
        `vqs bench:large, ${results.startedAt}: ${o.sizeBytes / MB} MB bodies of random bytes, ` +
          `${machine.cores} cores (${machine.cpuModel}), Node ${machine.node}, nats-server ${machine.nats}; ` +
          `median of ${o.rounds} paired round(s); baseline chunks of ${chunkBytes} bytes, ${BASELINE_WINDOW} in flight`,
        "",
        ...table,
        "",
        `Gateway memory (a full GC before each sample, every 100 ms; slope of the RSS peak over ` +
          `transfers: upload ${mem.slopeMiB.upload} MiB, download ${mem.slopeMiB.download} MiB):`,
        "",
        ...memTable,
        "",
        `Small publishes (1 KiB, ${o.smallRate}/s for ${o.smallSeconds} s), idle and while ` +
          `${LOADERS} large uploads run:`,
        "",
        ...latTable,
        "",
        ...(batch ? [batchLine(batch), ""] : []),
        "Targets (ratios within this run):",
        "",
        targetsTable(targets),
        "",
        `Results: ${relative(REPO_DIR, o.out)}`,
        "",
      ].join("\n"),
    );
  } finally {
    endTimeLimit();
    await servers.cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:large failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

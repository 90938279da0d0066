// `npm run bench:large [-- options]`: bodies of 100 MB through the gateway against raw JetStream
// chunk publishes and chunk reads of the same bytes, in one run on one nats-server: upload and
// download MB/s, the gateway's memory per concurrent large transfer, small-message publish
// latency while large uploads run, and a large batch part against a single publish. See
// bench/README.md ("Large bodies"). Never part of `npm test`; everything on 127.0.0.1; every loop
// bounded in count and time.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { GatewayProcess } from "./lib/gateways.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { batchLine, batchScenario, batchTarget } from "./lib/large/batch.js";
import { findBodyStore } from "./lib/large/body-store.js";
import {
  createChunkStream,
  downloadChunks,
  removeChunks,
  uploadChunks,
  type ChunkOptions,
  type ChunkStream,
} from "./lib/large/chunks.js";
import { slope, watchMemory } from "./lib/large/memory.js";
import { startSmallPublisher, type SmallPublisher } from "./lib/large/publisher.js";
import { acknowledge, downloadBody, uploadBody, type GatewayTarget } from "./lib/large/transfer.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import { targetsTable, type Target } from "./lib/report.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { median, percentiles, round, sleep, type Recorder } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(BENCH_DIR);
const RESULTS = join(BENCH_DIR, "results");
const MB = 1_000_000;
const MiB = 1024 * 1024;

const HELP = `npm run bench:large -- [options]
  --size-mb <n>         body size in MB of 10^6 bytes (default 100)
  --rounds <n>          paired raw/gateway rounds of upload and download, and batch rounds (default 3)
  --concurrency <list>  concurrent transfers of the memory scenario (default 1,2,4)
  --memory-repeats <n>  fresh-gateway runs of each memory level; slopes over their medians
                        (default 1)
  --small-rate <n>      small publishes a second in the latency scenario (default 100)
  --small-seconds <s>   each latency phase's length (default 10)
  --only <list>         scenarios to run, of throughput,memory,latency,batch (default all)
  --quick               --rounds 1, --small-seconds 5 (a check that everything runs)
  --out <file>          results file (default bench/results/large.json)`;

const SCENARIOS = ["throughput", "memory", "latency", "batch"];
const KINDS = ["upload", "download"] as const;
type Kind = (typeof KINDS)[number];
/** The baseline's publishes in flight and chunks read ahead: the gateway's (largeBodyWindow). */
const BASELINE_WINDOW = 8;
/** Concurrent large uploads in the latency scenario's loaded phase. */
const LOADERS = 4;

function parseOptions() {
  const { values } = parseArgs({
    options: {
      "size-mb": { type: "string", default: "100" },
      rounds: { type: "string" },
      concurrency: { type: "string", default: "1,2,4" },
      "memory-repeats": { type: "string", default: "1" },
      "small-rate": { type: "string", default: "100" },
      "small-seconds": { type: "string" },
      only: { type: "string", default: SCENARIOS.join(",") },
      quick: { type: "boolean", default: false },
      out: { type: "string", default: join(RESULTS, "large.json") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const num = numberOption;
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
    only,
    quick,
    out: values.out,
  };
}
type Options = ReturnType<typeof parseOptions>;

const log = elapsedLog();

interface Env {
  readonly gateway: GatewayProcess;
  readonly target: GatewayTarget;
  readonly api: GatewayApi;
  /** The timed small publishes' process (bench/large-publisher-process.ts). */
  readonly publisher: SmallPublisher;
  /** Another gateway like `gateway` (the memory levels get one each); the caller stops it. */
  readonly startGateway: () => Promise<GatewayProcess>;
}

const mbps = (bytes: number, ms: number) => round(bytes / MB / (ms / 1000), 1);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function purgeTopic(env: Env, topic: string): Promise<void> {
  await fetch(`${env.target.url}/api/v3/topic/${topic}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${env.target.token}` },
  }).catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------
// Scenario 1: upload and download MB/s, raw and gateway in paired rounds.

interface RoundResult {
  readonly rawUploadMBps: number;
  readonly gatewayUploadMBps: number;
  readonly rawDownloadMBps: number;
  readonly gatewayDownloadMBps: number;
}

async function throughput(
  o: Options,
  env: Env,
  js: ReturnType<typeof jetstream>,
  jsm: JetStreamManager,
  cs: ChunkStream,
  chunk: ChunkOptions,
  body: Buffer,
  sha256: string,
): Promise<RoundResult[]> {
  const rounds: RoundResult[] = [];
  for (let r = 1; r <= o.rounds; r++) {
    const topic = `large-${r}`;
    const rawUp = () => timed(() => uploadChunks(js, cs, `r${r}`, body, chunk));
    const gwUp = () =>
      timed(async () => {
        const res = await uploadBody(env.target, topic, body);
        if (res.status !== 201)
          throw new Error(`upload to ${topic}: HTTP ${res.status} ${res.body}`);
      });
    const rawDown = () =>
      timed(async () => {
        const res = await downloadChunks(js, cs, `r${r}`, body.length, chunk);
        if (res.sha256 !== sha256) throw new Error("raw chunk read: SHA-256 differs");
      });
    const gwDown = () =>
      timed(async () => {
        const res = await downloadBody(env.target, topic, `dl-${r}`);
        if (res.status !== 200 || res.sha256 !== sha256 || res.bytes !== body.length) {
          throw new Error(`download of ${topic}: HTTP ${res.status}, ${res.bytes} bytes`);
        }
        if (res.receiptHandle) await acknowledge(env.target, topic, `dl-${r}`, res.receiptHandle);
      });
    // Alternate which side goes first, so a drift of the machine's speed favours neither.
    const pair = async (raw: () => Promise<number>, gw: () => Promise<number>) => {
      if (r % 2 === 0) {
        const g = await gw();
        return [await raw(), g] as const;
      }
      const a = await raw();
      return [a, await gw()] as const;
    };
    const [rawUpMs, gwUpMs] = await pair(rawUp, gwUp);
    const [rawDownMs, gwDownMs] = await pair(rawDown, gwDown);
    await removeChunks(jsm, cs, `r${r}`);
    const res: RoundResult = {
      rawUploadMBps: mbps(body.length, rawUpMs),
      gatewayUploadMBps: mbps(body.length, gwUpMs),
      rawDownloadMBps: mbps(body.length, rawDownMs),
      gatewayDownloadMBps: mbps(body.length, gwDownMs),
    };
    log(
      `round ${r}: upload raw ${res.rawUploadMBps} / gateway ${res.gatewayUploadMBps} MB/s; ` +
        `download raw ${res.rawDownloadMBps} / gateway ${res.gatewayDownloadMBps} MB/s`,
    );
    rounds.push(res);
  }
  return rounds;
}

// ---------------------------------------------------------------------------------------------
// Scenario 2: the gateway's memory with k large transfers at once, a full GC before each sample.

interface MemoryLevel {
  readonly concurrency: number;
  readonly kind: Kind;
  /** Peak RSS and peak heapUsed + external (each after a forced GC), MiB. */
  readonly rssMiB: number;
  readonly liveMiB: number;
}

async function memoryScenario(o: Options, env: Env, body: Buffer, sha256: string) {
  // The body every download level receives (each download by a group of its own).
  const downloadTopic = "mem-download";
  const stored = await uploadBody(env.target, downloadTopic, body, 3600);
  if (stored.status !== 201) throw new Error(`memory: HTTP ${stored.status} ${stored.body}`);
  const transfer = async (target: GatewayTarget, kind: Kind, name: string) => {
    if (kind === "upload") {
      const res = await uploadBody(target, name, body, 60);
      if (res.status !== 201) throw new Error(`memory upload: HTTP ${res.status} ${res.body}`);
      return;
    }
    const res = await downloadBody(target, downloadTopic, name);
    if (res.status !== 200 || res.sha256 !== sha256) {
      throw new Error(`memory download: HTTP ${res.status}, ${res.bytes} bytes`);
    }
    if (res.receiptHandle) await acknowledge(target, downloadTopic, name, res.receiptHandle);
  };
  const levels: MemoryLevel[] = [];
  for (const kind of KINDS) {
    for (const k of o.concurrency) {
      for (let r = 0; r < o.memoryRepeats; r++) {
        // A gateway of its own per level and pass, so no level starts from an earlier one's
        // high-water mark; one transfer first, so the code and the buffers of the path are warm.
        const gw = await env.startGateway();
        const tag = `${kind}-${k}-${r}`;
        try {
          const target: GatewayTarget = { ...env.target, url: gw.url };
          await transfer(target, kind, `mem-warm-${tag}`);
          const watch = watchMemory(gw, 100);
          await Promise.all(
            Array.from({ length: k }, (_, i) => transfer(target, kind, `mem-${tag}-${i}`)),
          );
          const peak = await watch.stop();
          const level = {
            concurrency: k,
            kind,
            rssMiB: round(peak.rss / MiB, 1),
            liveMiB: round(peak.js / MiB, 1),
          };
          log(
            `memory, ${k} ${kind}(s) at once: RSS ${level.rssMiB} MiB, live ${level.liveMiB} MiB`,
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
  const slopeOf = (kind: Kind, y: (l: MemoryLevel) => number) =>
    round(
      slope(
        o.concurrency.map((k) => ({
          x: k,
          y: median(levels.filter((l) => l.kind === kind && l.concurrency === k).map(y)),
        })),
      ),
      2,
    );
  const slopes = (y: (l: MemoryLevel) => number) => ({
    upload: slopeOf("upload", y),
    download: slopeOf("download", y),
  });
  return { levels, slopeMiB: slopes((l) => l.rssMiB), liveSlopeMiB: slopes((l) => l.liveMiB) };
}

// ---------------------------------------------------------------------------------------------
// Scenario 3: small-message publish p99, idle and while large uploads run.

async function latencyScenario(o: Options, env: Env, body: Buffer) {
  // Publishes of 1 KiB at a fixed rate (open loop), from the small publisher's own process.
  const watched = async (seconds = o.smallSeconds): Promise<Recorder> =>
    (await env.publisher.run(env.gateway.url, env.target.token, "small", o.smallRate, seconds))
      .recorder;
  const p99 = (phase: string, rec: Recorder) => {
    const p = round(percentiles(rec.samples).p99, 2);
    log(
      `small publishes, ${phase}: p99 ${p} ms (${rec.operations} published, ${rec.errors} errors)`,
    );
    return p;
  };
  // A first publish creates the topic, which is not what is measured; a short warm-up at the
  // same rate lets the gateway's code settle (JIT) before the idle phase.
  await env.api.publish("small", Buffer.from("x"));
  await watched(Math.min(2, o.smallSeconds));
  const idle = p99("idle", await watched());
  let stop = false;
  let uploads = 0;
  const loaders = Array.from({ length: LOADERS }, async (_, w) => {
    for (let i = 0; !stop && i < 10_000; i++) {
      const res = await uploadBody(env.target, `load-${w}`, body, 60).catch(() => null);
      if (res?.status === 201) uploads++;
      else await sleep(100);
    }
  });
  await sleep(1000); // every loader under way before measuring
  const loaded = p99(`${LOADERS} large uploads running`, await watched());
  stop = true;
  await Promise.all(loaders);
  for (let w = 0; w < LOADERS; w++) await purgeTopic(env, `load-${w}`);
  await sleep(1000);
  const idleAgain = p99("idle again", await watched());
  const idleP99 = round((idle + idleAgain) / 2, 2);
  return { idleP99, loadedP99: loaded, p99Ratio: round(loaded / idleP99, 2), uploads };
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
    const { nats, gateway } = await servers.start({
      natsStore: join(servers.root, "store"),
      natsLog: join(RESULTS, "large-nats-server.log"),
      logFile: gatewayLog,
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
      gateway,
      publisher,
      target,
      api: new GatewayApi(client, servers.issuer.token),
      startGateway: () => servers.startGateway({ logFile: gatewayLog }),
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
    const probe = await uploadBody(target, "large-probe", body);
    if (probe.status !== 201) {
      throw new Error(
        `the gateway refused a ${o.sizeBytes / MB} MB body: HTTP ${probe.status} ${probe.body} ` +
          "(does it take large bodies? see VQS_MAX_MESSAGE_BYTES)",
      );
    }
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const store = await findBodyStore(jsm);
    const chunkBytes = store?.chunkBytes ?? MiB;
    const cs = await createChunkStream(jsm, "BENCH_LARGE", store?.config ?? null);
    const chunk: ChunkOptions = { chunkBytes, window: BASELINE_WINDOW, timeoutMs: 120_000 };
    // Warm-up of the baseline's path too.
    await uploadChunks(js, cs, "warm", body, chunk);
    await downloadChunks(js, cs, "warm", body.length, chunk);
    await removeChunks(jsm, cs, "warm");

    const tp = o.only.has("throughput")
      ? await throughput(o, env, js, jsm, cs, chunk, body, sha256)
      : [];
    const mem = o.only.has("memory") ? await memoryScenario(o, env, body, sha256) : null;
    const lat = o.only.has("latency") ? await latencyScenario(o, env, body) : null;
    const batch = o.only.has("batch") ? await batchScenario(env, body, o.rounds, log) : null;

    const med = (f: (r: RoundResult) => number) => round(median(tp.map(f)), 2);
    const summary = {
      rawUploadMBps: med((r) => r.rawUploadMBps),
      gatewayUploadMBps: med((r) => r.gatewayUploadMBps),
      rawDownloadMBps: med((r) => r.rawDownloadMBps),
      gatewayDownloadMBps: med((r) => r.gatewayDownloadMBps),
      uploadRatio: med((r) => r.gatewayUploadMBps / r.rawUploadMBps),
      downloadRatio: med((r) => r.gatewayDownloadMBps / r.rawDownloadMBps),
    };
    const targets: Target[] = [];
    if (tp.length) {
      for (const way of ["upload", "download"] as const) {
        const value = way === "upload" ? summary.uploadRatio : summary.downloadRatio;
        targets.push({
          name: `${way} MB/s, ${o.sizeBytes / MB} MB, gateway vs raw chunk ${way === "upload" ? "publishes" : "reads"}`,
          target: ">= 0.5x raw",
          value,
          pass: value >= 0.5,
        });
      }
    }
    for (const kind of mem ? KINDS : []) {
      targets.push({
        name: `gateway RSS per additional concurrent ${kind} (slope over ${o.concurrency.join(", ")}; a full GC before each sample)`,
        target: "<= 4 MiB",
        value: mem!.slopeMiB[kind],
        pass: mem!.slopeMiB[kind] <= 4,
        note: `live heap+external ${mem!.liveSlopeMiB[kind]} MiB`,
      });
    }
    if (lat) {
      targets.push({
        name: `small publish p99 while ${LOADERS} large uploads run, vs idle`,
        target: "<= 2x idle",
        value: lat.p99Ratio,
        pass: lat.p99Ratio <= 2,
        note: `${lat.loadedP99} vs ${lat.idleP99} ms`,
      });
    }
    if (batch) targets.push(batchTarget(batch));

    const results = {
      tool: "vqs bench:large (bench/large.ts)",
      finishedAt: new Date().toISOString(),
      options: { ...o, only: [...o.only], baselineChunkBytes: chunkBytes, loaders: LOADERS },
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      throughput: { rounds: tp, ...summary },
      memory: mem,
      smallPublishLatency: lat,
      batch,
      targets,
    };
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, JSON.stringify(results, null, 2) + "\n");
    process.stdout.write(
      [
        "",
        `vqs bench:large, ${results.finishedAt}: ${o.sizeBytes / MB} MB bodies of random bytes, ` +
          `${machine.cores} cores (${machine.cpuModel}), nats-server ${machine.nats}; ` +
          `median of ${o.rounds} paired round(s); baseline chunks of ${chunkBytes} bytes, ${BASELINE_WINDOW} in flight`,
        "",
        ...(tp.length
          ? [
              "| | raw JetStream chunks | gateway | gateway / raw |",
              "| --- | ---: | ---: | ---: |",
              `| upload MB/s | ${summary.rawUploadMBps} | ${summary.gatewayUploadMBps} | ${summary.uploadRatio} |`,
              `| download MB/s | ${summary.rawDownloadMBps} | ${summary.gatewayDownloadMBps} | ${summary.downloadRatio} |`,
              "",
            ]
          : []),
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

// The BullMQ comparison (bench/README.md, "Against BullMQ"): on a running gateway and
// nats-server, it starts Debian's redis-server (AOF, fsync every second) and the plain push
// endpoint, then measures, in rounds of alternating order after a warm-up:
//   enqueue: 64 concurrent HTTP publishes (1 KiB) against 64 concurrent `Queue.add`s (1 KiB of
//            job data), `messages` each, from the load generator;
//   consume: push of that backlog to the plain endpoint (autoAck, maxConcurrency 64) against a
//            BullMQ `Worker` at concurrency 64 with a handler that does nothing (own process).
// Used by `npm run bench` and `npm run bench:bullmq`.
import { Queue } from "bullmq";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { freePort } from "../../../src/dev/nats-server-process.js";
import type { GatewayApi } from "../gw.js";
import { loadAverage, sampleProc, type ProcSample } from "../proc.js";
import { startPushEndpoint, type PushEndpoint } from "../push/endpoints.js";
import { median, round, sleep } from "../stats.js";

const BENCH_DIR = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const IN_FLIGHT = 64;
/** The pinned BullMQ version (package.json), for the report. */
export const BULLMQ_VERSION = "6.7.0";

export interface BullmqContext {
  readonly api: GatewayApi;
  readonly gatewayPid: number;
  readonly natsPid: number;
  /** Where the endpoint's log goes. */
  readonly logDir: string;
  /** Redis's store (made here). */
  readonly redisDir: string;
  readonly log: (line: string) => void;
}

export interface BullmqOptions {
  readonly messages: number;
  readonly rounds: number;
}

export interface BullmqResult {
  readonly bullmq: string;
  readonly redis: string;
  readonly loadAverageAtStart: number;
  readonly loadAverageAtEnd: number;
  readonly messages: number;
  readonly payloadBytes: number;
  readonly inFlight: number;
  readonly rounds: readonly {
    readonly enqueue: { readonly gateway: Measured; readonly bullmq: Measured };
    readonly consume: { readonly gateway: Measured; readonly bullmq: Measured };
  }[];
  /** Medians of the rounds' gateway ÷ BullMQ rates. */
  readonly ratio: { readonly enqueue: number; readonly consume: number };
}

/** Whether redis-server is installed (scripts/ensure-redis.mjs installs it). */
export function redisServerVersion(): string | null {
  const r = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

export interface Measured {
  readonly msgsPerSec: number;
  readonly seconds: number;
  /** CPU µs per message of each named process. */
  readonly cpuUsPerMsg: Record<string, number>;
}

/** Runs `work`, timing it and reading the named processes' CPU around it. */
async function measure(
  n: number,
  pids: Record<string, number>,
  work: () => Promise<void>,
): Promise<Measured> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, sampleProc(p)]));
  const t0 = performance.now();
  await work();
  const seconds = (performance.now() - t0) / 1000;
  const cpu: Record<string, number> = {};
  for (const [k, p] of Object.entries(pids)) {
    const a = before[k] as ProcSample | null;
    const b = sampleProc(p);
    cpu[k] = a && b ? round(((b.cpuSeconds - a.cpuSeconds) * 1e6) / n, 1) : NaN;
  }
  return { msgsPerSec: round(n / seconds, 0), seconds: round(seconds, 2), cpuUsPerMsg: cpu };
}

/** `n` calls of `op`, `IN_FLIGHT` at a time. */
async function concurrently(n: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await op(next++);
    }),
  );
}

async function startRedis(dir: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  await mkdir(dir, { recursive: true });
  // AOF with an fsync every second (Redis's recommended durability for queues), no RDB snapshots.
  const args = [
    ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
    ...["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
    ...["--protected-mode", "no", "--logfile", join(dir, "redis.log")],
    ...["--maxmemory-policy", "noeviction"],
  ];
  const child = spawn("redis-server", args, { stdio: "ignore" });
  child.once("error", (err) =>
    log(`redis-server: ${String(err)} (run node scripts/ensure-redis.mjs)`),
  );
  const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 1 });
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      probe.disconnect();
      if (i > 100) throw new Error("redis-server did not start (node scripts/ensure-redis.mjs)");
      await sleep(100);
    }
  }
  probe.disconnect();
  return { port, child };
}

/** A BullMQ Worker process for `queue`; resolves once it processed `n` jobs after "run". */
async function workerRun(
  redisPort: number,
  queue: string,
  n: number,
  pids: Record<string, number>,
): Promise<Measured> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(BENCH_DIR, "bullmq-worker-process.ts"),
      String(redisPort),
      queue,
      String(IN_FLIGHT),
    ],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  let completed = 0;
  let ready = false;
  child.on("message", (m: { type?: string; completed?: number }) => {
    if (m.type === "ready") ready = true;
    if (m.type === "count") completed = m.completed ?? 0;
  });
  try {
    for (let i = 0; !ready; i++) {
      if (i > 400) throw new Error("the BullMQ worker did not start");
      await sleep(50);
    }
    return await measure(n, { ...pids, worker: child.pid ?? 0 }, async () => {
      child.send({ type: "run" });
      for (let i = 0; completed < n; i++) {
        if (i > 20 * 600) throw new Error(`the BullMQ worker completed ${completed} of ${n}`);
        await sleep(20);
      }
    });
  } finally {
    child.disconnect();
    child.kill("SIGTERM");
  }
}

/** Pushes `topic`'s backlog of `n` to the plain endpoint (autoAck, 64); resolves when all are in. */
async function pushRun(
  api: GatewayApi,
  ep: PushEndpoint,
  topic: string,
  n: number,
  pids: Record<string, number>,
): Promise<Measured> {
  const start = (await ep.read()).ok;
  const settings = (push: unknown) =>
    api.putSettings(topic, "push", push).then((r) => {
      if (r.status !== 200) throw new Error(`settings: HTTP ${r.status}`);
    });
  const m = await measure(n, { ...pids, endpoint: ep.pid }, async () => {
    await settings({ push: { url: ep.url, maxConcurrency: IN_FLIGHT, autoAck: true } });
    for (let i = 0; (await ep.read()).ok - start < n; i++) {
      if (i > 20 * 600) throw new Error("the pushes did not all arrive in 10 minutes");
      await sleep(20);
    }
  });
  await settings({});
  return m;
}

async function publishAll(api: GatewayApi, topic: string, payload: Buffer, n: number) {
  let errors = 0;
  await concurrently(n, async () => {
    const res = await api.publish(topic, payload);
    if (res.status !== 201) errors++;
  });
  if (errors) throw new Error(`${errors} publishes failed`);
}

export async function bullmqScenario(ctx: BullmqContext, o: BullmqOptions): Promise<BullmqResult> {
  const MESSAGES = o.messages;
  const WARM = Math.ceil(MESSAGES / 10);
  const loadAtStart = loadAverage();
  let redis: ChildProcess | null = null;
  let endpoint: PushEndpoint | null = null;
  const queues: Queue[] = [];
  try {
    const r = await startRedis(ctx.redisDir);
    redis = r.child;
    const logFile = join(ctx.logDir, "push-endpoint-plain.log");
    await mkdir(ctx.logDir, { recursive: true });
    await writeFile(logFile, "");
    endpoint = await startPushEndpoint({ logFile });
    const api = ctx.api;
    const payload = randomBytes(1024);
    const data = { p: randomBytes(768).toString("base64") }; // 1,024 characters
    const connection = { host: "127.0.0.1", port: r.port };
    const queue = (name: string) => {
      // Completed jobs are removed, as production setups do (and the cheaper choice for Redis).
      const q = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } });
      queues.push(q);
      return q;
    };
    const redisPid = redis.pid ?? 0;
    const gwPids = { gateway: ctx.gatewayPid, nats: ctx.natsPid, loadGenerator: process.pid };
    const bullPids = { redis: redisPid, loadGenerator: process.pid };
    const consumePids = { gateway: ctx.gatewayPid, nats: ctx.natsPid };

    ctx.log(`bullmq: warm-up (${WARM} each way); load average ${loadAtStart}`);
    await publishAll(api, "bullmq-warm", payload, WARM);
    const wq = queue("warm");
    await concurrently(WARM, async (i) => void (await wq.add(`m${i}`, data)));
    await pushRun(api, endpoint, "bullmq-warm", WARM, consumePids);
    await workerRun(r.port, "warm", WARM, { redis: redisPid });

    const rounds: BullmqResult["rounds"][number][] = [];
    for (let k = 0; k < o.rounds; k++) {
      const topic = `bullmq-cmp-${k}`;
      const q = queue(`cmp-${k}`);
      const ep = endpoint;
      const enq = async (side: "gateway" | "bullmq") =>
        side === "gateway"
          ? measure(MESSAGES, gwPids, () => publishAll(api, topic, payload, MESSAGES))
          : measure(MESSAGES, bullPids, () =>
              concurrently(MESSAGES, async (i) => void (await q.add(`m${i}`, data))),
            );
      const con = async (side: "gateway" | "bullmq") =>
        side === "gateway"
          ? pushRun(api, ep, topic, MESSAGES, consumePids)
          : workerRun(r.port, `cmp-${k}`, MESSAGES, { redis: redisPid });
      const order =
        k % 2 === 0 ? (["gateway", "bullmq"] as const) : (["bullmq", "gateway"] as const);
      const e: Record<string, Measured> = {};
      for (const side of order) e[side] = await enq(side);
      const c: Record<string, Measured> = {};
      for (const side of order) c[side] = await con(side);
      rounds.push({
        enqueue: { gateway: e.gateway!, bullmq: e.bullmq! },
        consume: { gateway: c.gateway!, bullmq: c.bullmq! },
      });
      ctx.log(
        `  bullmq round ${k + 1}: enqueue gateway ${e.gateway!.msgsPerSec}/s, BullMQ ${e.bullmq!.msgsPerSec}/s; ` +
          `push ${c.gateway!.msgsPerSec}/s, BullMQ worker ${c.bullmq!.msgsPerSec}/s`,
      );
    }
    const ratio = (f: (x: BullmqResult["rounds"][number]) => number) =>
      round(median(rounds.map(f)), 2);
    return {
      bullmq: BULLMQ_VERSION,
      redis: redisServerVersion() ?? "unknown",
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: loadAverage(),
      messages: MESSAGES,
      payloadBytes: 1024,
      inFlight: IN_FLIGHT,
      rounds,
      ratio: {
        enqueue: ratio((x) => x.enqueue.gateway.msgsPerSec / x.enqueue.bullmq.msgsPerSec),
        consume: ratio((x) => x.consume.gateway.msgsPerSec / x.consume.bullmq.msgsPerSec),
      },
    };
  } finally {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    await endpoint?.stop().catch(() => undefined);
    redis?.kill("SIGTERM");
  }
}

/** The comparison as a Markdown table. */
export function bullmqTable(r: BullmqResult): string {
  const cpu = (m: Measured) =>
    Object.entries(m.cpuUsPerMsg)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  return [
    `Gateway vs BullMQ ${r.bullmq} on Redis (AOF everysec), ${r.messages} messages of 1 KiB, ${r.inFlight} in flight, ${r.rounds.length} round(s); load average ${r.loadAverageAtStart} -> ${r.loadAverageAtEnd}`,
    "",
    "| round | what | gateway msg/s | BullMQ msg/s | gateway ÷ BullMQ | gateway side CPU µs/msg | BullMQ side CPU µs/msg |",
    "| ---: | --- | ---: | ---: | ---: | --- | --- |",
    ...r.rounds.flatMap((x, i) => [
      `| ${i + 1} | enqueue (publish / add) | ${x.enqueue.gateway.msgsPerSec} | ${x.enqueue.bullmq.msgsPerSec} | ${round(x.enqueue.gateway.msgsPerSec / x.enqueue.bullmq.msgsPerSec, 2)} | ${cpu(x.enqueue.gateway)} | ${cpu(x.enqueue.bullmq)} |`,
      `| ${i + 1} | consume (push / Worker) | ${x.consume.gateway.msgsPerSec} | ${x.consume.bullmq.msgsPerSec} | ${round(x.consume.gateway.msgsPerSec / x.consume.bullmq.msgsPerSec, 2)} | ${cpu(x.consume.gateway)} | ${cpu(x.consume.bullmq)} |`,
    ]),
    "",
    `median gateway ÷ BullMQ: enqueue ${r.ratio.enqueue}x, consume ${r.ratio.consume}x`,
  ].join("\n");
}

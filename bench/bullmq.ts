// `npm run bench:bullmq [-- --messages n --rounds n]`: the gateway against the queue a Node team
// would self-host instead, BullMQ on Redis, on this machine in one run. Debian's redis-server
// (AOF, fsync every second; scripts/ensure-redis.mjs installs it) and npm bullmq (pinned).
//   enqueue: 64 concurrent HTTP publishes (1 KiB) against 64 concurrent `Queue.add`s (1 KiB of
//            job data), `messages` each, from this process;
//   consume: push of that backlog to a plain endpoint (autoAck, maxConcurrency 64; the endpoint
//            in its own process) against a BullMQ `Worker` at concurrency 64 with a handler that
//            does nothing (in its own process), until all `messages` are done.
// Both sides are warmed up first (a small round each), then run in rounds of alternating order
// (A B, B A, ...); the answer is the median of the rounds' ratios, with each process's CPU per
// message. Never part of `npm test`; everything on 127.0.0.1, bounded.
import { Queue } from "bullmq";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { freePort } from "../src/dev/nats-server-process.js";
import { benchGatewayEnv, startGatewayProcess, type GatewayProcess } from "./lib/gateways.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer } from "./lib/issuer.js";
import { startBenchNats, type BenchNats } from "./lib/nats-server.js";
import { boundRun, loadAverage, sampleProc, type ProcSample } from "./lib/proc.js";
import { startPushEndpoint, type PushEndpoint } from "./lib/push/endpoints.js";
import { round, sleep } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH_DIR, "results");
const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "20000" },
    rounds: { type: "string", default: "2" },
    out: { type: "string", default: join(RESULTS, "bullmq.json") },
  },
});
const MESSAGES = Number(values.messages);
const ROUNDS = Math.max(1, Number(values.rounds));
const WARM = Math.ceil(MESSAGES / 10);
const IN_FLIGHT = 64;
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Measured {
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
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--save",
    "",
    "--protected-mode",
    "no",
    "--logfile",
    join(dir, "redis.log"),
    "--maxmemory-policy",
    "noeviction",
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

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "vqs-bullmq-"));
  const issuer = await startBenchIssuer();
  let nats: BenchNats | null = null;
  let gateway: GatewayProcess | null = null;
  let redis: ChildProcess | null = null;
  let endpoint: PushEndpoint | null = null;
  const queues: Queue[] = [];
  const cleanup = async () => {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    await endpoint?.stop().catch(() => undefined);
    redis?.kill("SIGTERM");
    await gateway?.stop().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await issuer.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  };
  const endLimit = boundRun(cleanup, 20 * 60_000, log);
  try {
    await mkdir(RESULTS, { recursive: true });
    const loadAtStart = loadAverage();
    nats = await startBenchNats(join(root, "nats"), join(RESULTS, "nats-server.log"));
    gateway = await startGatewayProcess({
      env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE),
      logFile: join(RESULTS, "gateway-1.log"),
    });
    const r = await startRedis(join(root, "redis"));
    redis = r.child;
    const client = createHttpClient("node", [gateway.url]);
    const api = new GatewayApi(client, issuer.token);
    const logFile = join(RESULTS, "push-endpoint-plain.log");
    await writeFile(logFile, "");
    endpoint = await startPushEndpoint({
      mode: "plain",
      gatewayUrl: gateway.url,
      token: issuer.token,
      logFile,
    });
    const payload = randomBytes(1024);
    const data = { p: randomBytes(768).toString("base64") }; // 1,024 characters
    const connection = { host: "127.0.0.1", port: r.port };
    const queue = (name: string) => {
      // Completed jobs are removed, as production setups do (and the cheaper choice for Redis).
      const q = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } });
      queues.push(q);
      return q;
    };
    const gwPids = { gateway: gateway.pid, nats: nats.pid, loadGenerator: process.pid };
    const bullPids = { redis: redis.pid ?? 0, loadGenerator: process.pid };
    const consumePids = { gateway: gateway.pid, nats: nats.pid };

    log(`bullmq: warm-up (${WARM} each way); load average ${loadAtStart}`);
    await publishAll(api, "warm", payload, WARM);
    const wq = queue("warm");
    await concurrently(WARM, async (i) => void (await wq.add(`m${i}`, data)));
    await pushRun(api, endpoint, "warm", WARM, consumePids);
    await workerRun(r.port, "warm", WARM, { redis: redis.pid ?? 0 });

    const rounds: {
      enqueue: { gateway: Measured; bullmq: Measured };
      consume: { gateway: Measured; bullmq: Measured };
    }[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      const topic = `cmp-${k}`;
      const q = queue(`cmp-${k}`);
      const gwFirst = k % 2 === 0;
      const enq = async (side: "gateway" | "bullmq") =>
        side === "gateway"
          ? measure(MESSAGES, gwPids, () => publishAll(api, topic, payload, MESSAGES))
          : measure(MESSAGES, bullPids, () =>
              concurrently(MESSAGES, async (i) => void (await q.add(`m${i}`, data))),
            );
      const con = async (side: "gateway" | "bullmq") =>
        side === "gateway"
          ? pushRun(api, endpoint!, topic, MESSAGES, consumePids)
          : workerRun(r.port, `cmp-${k}`, MESSAGES, { redis: redis!.pid ?? 0 });
      const order = gwFirst ? (["gateway", "bullmq"] as const) : (["bullmq", "gateway"] as const);
      const e: Record<string, Measured> = {};
      for (const side of order) e[side] = await enq(side);
      const c: Record<string, Measured> = {};
      for (const side of order) c[side] = await con(side);
      rounds.push({
        enqueue: { gateway: e.gateway!, bullmq: e.bullmq! },
        consume: { gateway: c.gateway!, bullmq: c.bullmq! },
      });
      log(
        `round ${k + 1}: enqueue gateway ${e.gateway!.msgsPerSec}/s, BullMQ ${e.bullmq!.msgsPerSec}/s; ` +
          `push ${c.gateway!.msgsPerSec}/s, BullMQ worker ${c.bullmq!.msgsPerSec}/s`,
      );
    }
    const results = {
      tool: "vqs bench:bullmq (bench/bullmq.ts)",
      startedAt: new Date().toISOString(),
      machine: {
        cores: availableParallelism(),
        cpuModel: cpus()[0]?.model ?? "unknown",
        node: process.version,
      },
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: loadAverage(),
      messages: MESSAGES,
      payloadBytes: 1024,
      inFlight: IN_FLIGHT,
      rounds,
      ratio: {
        enqueue: round(
          median(rounds.map((x) => x.enqueue.gateway.msgsPerSec / x.enqueue.bullmq.msgsPerSec)),
          2,
        ),
        consume: round(
          median(rounds.map((x) => x.consume.gateway.msgsPerSec / x.consume.bullmq.msgsPerSec)),
          2,
        ),
      },
    };
    await writeFile(values.out, JSON.stringify(results, null, 2) + "\n");
    const cpu = (m: Measured) =>
      Object.entries(m.cpuUsPerMsg)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");
    const lines = [
      "",
      `Gateway vs BullMQ ${"6.7.0"} on Redis (AOF everysec), ${MESSAGES} messages of 1 KiB, ${IN_FLIGHT} in flight, ${ROUNDS} round(s); load average ${loadAtStart} -> ${results.loadAverageAtEnd}`,
      "",
      "| round | what | gateway msg/s | BullMQ msg/s | gateway ÷ BullMQ | gateway side CPU µs/msg | BullMQ side CPU µs/msg |",
      "| ---: | --- | ---: | ---: | ---: | --- | --- |",
      ...rounds.flatMap((x, i) => [
        `| ${i + 1} | enqueue (publish / add) | ${x.enqueue.gateway.msgsPerSec} | ${x.enqueue.bullmq.msgsPerSec} | ${round(x.enqueue.gateway.msgsPerSec / x.enqueue.bullmq.msgsPerSec, 2)} | ${cpu(x.enqueue.gateway)} | ${cpu(x.enqueue.bullmq)} |`,
        `| ${i + 1} | consume (push / Worker) | ${x.consume.gateway.msgsPerSec} | ${x.consume.bullmq.msgsPerSec} | ${round(x.consume.gateway.msgsPerSec / x.consume.bullmq.msgsPerSec, 2)} | ${cpu(x.consume.gateway)} | ${cpu(x.consume.bullmq)} |`,
      ]),
      "",
      `median gateway ÷ BullMQ: enqueue ${results.ratio.enqueue}x, consume ${results.ratio.consume}x`,
      "",
    ];
    process.stdout.write(lines.join("\n"));
  } finally {
    endLimit();
    await cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:bullmq failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

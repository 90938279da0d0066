// `npm run bench:long-poll [-- --quick] [options]`: long polling at scale, on one gateway process.
// N receivers (10,000) spread over G consumer groups (100; one group on each of G topics) each hold
// one keep-alive connection and loop over ReceiveMessages with Vqs-Wait-Seconds (20), answering
// each 204 with the next receive at once. Measured: the gateway's memory per waiter, the NATS
// subscriptions and pull requests held, publish→receive latency of messages published while they
// wait (one at a time, and one to every group at once), and CPU while they wait. See
// bench/README.md.
// Never part of `npm test`. All traffic stays on 127.0.0.1; every loop is bounded in count and time.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { GatewayProcess } from "./lib/gateways.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient, parseMultipart } from "./lib/http-client.js";
import { openFilesLimit, type BenchNats } from "./lib/nats-server.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import { GROUP, ReceiverFleet, stampMessage, type FleetCounts } from "./lib/receiver-fleet.js";
import { drive, type Processes, type ResourceUse } from "./lib/runner.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { percentiles, Recorder, round, sleep } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(BENCH_DIR);
const GATEWAY_LOG = join(BENCH_DIR, "results", "long-poll-gateway.log");
const NATS_LOG = join(BENCH_DIR, "results", "long-poll-nats-server.log");
/** Open files each process needs beyond one per receiver (NATS, logs, the publisher, node). */
const SPARE_FILES = 512;
/** Kinds of message (byte 12 of the payload), for the latency recorders. */
const KIND = { warmUp: 0, longSpaced: 1, longBurst: 2 } as const;

const HELP = `npm run bench:long-poll -- [options]
  --quick              ~1.5 min: 2,000 waiters over 20 groups, 10 s waits, short windows
  --waiters <n>        receivers, one keep-alive connection each (default 10000; capped by the
                       open-files limit, which the npm script raises to the hard limit)
  --groups <n>         consumer groups they are spread over, one per topic (default 100)
  --wait-seconds <s>   Vqs-Wait-Seconds of each long poll (default 20, the API's maximum)
  --idle-seconds <s>   CPU window while all wait and nothing is published (default 10, quick 3)
  --messages <n>       messages published one at a time while they wait (default 200, quick 40)
  --spacing-ms <ms>    between those publishes (default 25)
  --bursts <n>         bursts of one message to every group at once (default 5, quick 2)
  --out <file>         results file (default bench/results/long-poll.json)`;

interface Options {
  readonly quick: boolean;
  readonly waiters: number;
  readonly wantedWaiters: number;
  readonly groups: number;
  readonly waitSeconds: number;
  readonly idleSeconds: number;
  readonly messages: number;
  readonly spacingMs: number;
  readonly bursts: number;
  readonly out: string;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      waiters: { type: "string" },
      groups: { type: "string" },
      "wait-seconds": { type: "string" },
      "idle-seconds": { type: "string" },
      messages: { type: "string" },
      "spacing-ms": { type: "string", default: "25" },
      bursts: { type: "string" },
      out: { type: "string", default: join(BENCH_DIR, "results", "long-poll.json") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const q = values.quick;
  const num = numberOption;
  const wanted = Math.round(num("waiters", values.waiters ?? (q ? "2000" : "10000"), 1, 1e6));
  const groups = Math.round(num("groups", values.groups ?? (q ? "20" : "100"), 1, 1000));
  return {
    quick: q,
    wantedWaiters: wanted,
    waiters: Math.max(groups, Math.min(wanted, (openFilesLimit("self") ?? 1024) - SPARE_FILES)),
    groups,
    waitSeconds: Math.round(
      num("wait-seconds", values["wait-seconds"] ?? (q ? "10" : "20"), 3, 20),
    ),
    idleSeconds: num("idle-seconds", values["idle-seconds"] ?? (q ? "3" : "10"), 1, 60),
    messages: Math.round(num("messages", values.messages ?? (q ? "40" : "200"), 1, 100_000)),
    spacingMs: num("spacing-ms", values["spacing-ms"], 1, 10_000),
    bursts: Math.round(num("bursts", values.bursts ?? (q ? "2" : "5"), 0, 100)),
    out: values.out,
  };
}

const log = elapsedLog();

function openFiles(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** Polls `cond` every `stepMs` until it holds or `maxMs` passed; answers whether it held. */
async function until(cond: () => boolean | Promise<boolean>, maxMs: number, stepMs = 250) {
  const deadline = performance.now() + maxMs;
  for (let i = 0; i < 1_000_000 && performance.now() < deadline; i++) {
    if (await cond()) return true;
    await sleep(stepMs);
  }
  return cond();
}

// ---------------------------------------------------------------------------------------------
// Readings

interface Memory {
  readonly rssMB: number;
  readonly heapUsedMB: number;
  readonly externalMB: number;
  readonly arrayBuffersMB: number;
  readonly openFiles: number | null;
}

/** The gateway's memory after a full GC (the bench gateway runs with --expose-gc). */
async function gatewayMemory(gw: GatewayProcess): Promise<Memory> {
  const m = await gw.memory();
  const mb = (n: number | undefined) => round((n ?? NaN) / 1024 ** 2, 2);
  return {
    rssMB: mb(m?.rss),
    heapUsedMB: mb(m?.heapUsed),
    externalMB: mb(m?.external),
    arrayBuffersMB: mb(m?.arrayBuffers),
    openFiles: openFiles(gw.pid),
  };
}

interface NatsState {
  /** Subscriptions of the gateway's NATS connection(s) (/connz). */
  readonly gatewaySubscriptions: number;
  /** Subscriptions on the whole server (/varz). */
  readonly serverSubscriptions: number;
  /** Waiting pull requests (consumer info num_waiting) over the groups' consumers. */
  readonly pullsHeld: number;
  readonly maxPullsPerConsumer: number;
  readonly consumers: number;
  readonly natsRssMB: number;
}

async function natsState(nats: BenchNats, jsm: JetStreamManager): Promise<NatsState> {
  const [connz, varz] = await Promise.all([nats.monitor("/connz?subs=1&limit=1024"), nats.varz()]);
  const conns = (connz?.connections ?? []) as { name?: string; subscriptions?: number }[];
  let pullsHeld = 0;
  let maxPulls = 0;
  let consumers = 0;
  try {
    for await (const s of jsm.streams.list()) {
      // Topic streams (VQS_<hash>); the service's own streams hold no group consumers.
      if (!/^VQS_[0-9a-f]{32}$/.test(s.config.name)) continue;
      for await (const c of jsm.consumers.list(s.config.name)) {
        consumers++;
        pullsHeld += c.num_waiting;
        maxPulls = Math.max(maxPulls, c.num_waiting);
      }
    }
  } catch (err) {
    // A JetStream API swamped by 10,000 short pollers may not answer the listing in time: the
    // reading is lost (NaN, null in the JSON), not the run.
    log(`NATS consumer listing failed (${err instanceof Error ? err.message : String(err)})`);
    pullsHeld = maxPulls = consumers = NaN;
  }
  return {
    gatewaySubscriptions: conns
      .filter((c) => c.name?.startsWith("vqs-gateway"))
      .reduce((n, c) => n + (c.subscriptions ?? 0), 0),
    serverSubscriptions: Number(varz?.subscriptions ?? NaN),
    pullsHeld,
    maxPullsPerConsumer: maxPulls,
    consumers,
    natsRssMB: round(Number(varz?.mem ?? NaN) / 1024 ** 2, 1),
  };
}

interface CpuWindow {
  readonly seconds: number;
  /** CPU in % of one core: gateway, NATS, load generator, other processes, steal. */
  readonly cpu: ResourceUse;
  readonly receivesPerSec: number;
  readonly acksPerSec: number;
  readonly errors: number;
  /** Messages nats-server took in and sent out per second (/varz). */
  readonly natsInMsgsPerSec: number;
  readonly natsOutMsgsPerSec: number;
}

/** CPU of every process over `ms` (the runner's readings, with no workers of its own). */
async function cpuWindow(
  procs: Processes,
  nats: BenchNats,
  fleet: ReceiverFleet | null,
  ms: number,
): Promise<CpuWindow> {
  const before: FleetCounts | null = fleet ? { ...fleet.counts } : null;
  const v0 = await nats.varz();
  const { window, resources } = await drive(procs, 0, 0, ms, () => Promise.resolve());
  const v1 = await nats.varz();
  const seconds = window.seconds;
  const rate = (k: keyof FleetCounts) =>
    fleet && before ? round((fleet.counts[k] - before[k]) / seconds, 1) : 0;
  const varzRate = (k: string) => round((Number(v1?.[k]) - Number(v0?.[k])) / seconds, 1);
  const r = (n: number) => round(n, 1);
  return {
    seconds: round(seconds, 1),
    cpu: {
      gatewayCpu: r(resources.gatewayCpu),
      natsCpu: r(resources.natsCpu),
      clientCpu: r(resources.clientCpu),
      otherCpu: r(resources.otherCpu),
      stealCpu: r(resources.stealCpu),
      natsWriteMBps: r(resources.natsWriteMBps),
    },
    receivesPerSec: rate("receives"),
    acksPerSec: rate("acks"),
    errors: fleet && before ? fleet.counts.errors - before.errors : 0,
    natsInMsgsPerSec: varzRate("in_msgs"),
    natsOutMsgsPerSec: varzRate("out_msgs"),
  };
}

function cpuLine(w: CpuWindow): string {
  const c = w.cpu;
  return (
    `CPU % gw ${c.gatewayCpu} nats ${c.natsCpu} client ${c.clientCpu} other ${c.otherCpu} steal ${c.stealCpu}; ` +
    `receives ${w.receivesPerSec}/s, acks ${w.acksPerSec}/s; NATS msgs in ${w.natsInMsgsPerSec}/s out ${w.natsOutMsgsPerSec}/s` +
    (w.errors ? `; errors ${w.errors}` : "")
  );
}

// ---------------------------------------------------------------------------------------------
// Publishing

class Publisher {
  readonly #api: GatewayApi;
  readonly publishLatency = new Recorder();
  /** Sequence numbers of the messages stored (201). */
  readonly stored = new Set<number>();
  errors = 0;
  seq = 0;

  constructor(api: GatewayApi) {
    this.#api = api;
  }

  async publish(topic: string, kind: number): Promise<void> {
    const seq = this.seq++;
    const t = performance.now();
    try {
      const res = await this.#api.publish(topic, stampMessage(seq, kind));
      if (res.status !== 201) throw new Error(`publish HTTP ${res.status}`);
      this.publishLatency.record(performance.now() - t);
      this.stored.add(seq);
    } catch {
      this.errors++;
    }
  }
}

interface LatencyResult {
  readonly oneAtATime: { published: number; p50Ms: number; p99Ms: number; maxMs: number };
  readonly burst: { published: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The publish call itself (HTTP, stored in JetStream), p50/p99 ms. */
  readonly publishP50Ms: number;
  readonly publishP99Ms: number;
  readonly received: number;
  /** Stored but never received within the phase's bound. */
  readonly missing: number;
  /** Received more than once. */
  readonly duplicates: number;
  /** Receives answered with messages, and long polls answered 204 early, during the phase. */
  readonly answeredWithMessages: number;
  readonly earlyEmpty: number;
  readonly publishErrors: number;
}

/**
 * Publishes `messages` one at a time, `spacingMs` apart, round-robin over the topics, then
 * `bursts` bursts of one message to every topic at once (a second apart), and waits (bounded) for
 * every stored one to be received.
 */
async function latencyPhase(
  o: Options,
  fleet: ReceiverFleet,
  pub: Publisher,
  topics: readonly string[],
  kinds: { spaced: number; burst: number },
): Promise<LatencyResult> {
  const first = pub.seq;
  const errors0 = pub.errors;
  const counts0 = { ...fleet.counts };
  const publish0 = pub.publishLatency.samples.length;
  // On time, whether or not the previous publish has been answered (a loaded gateway answers
  // slowly; the latency counts from the send).
  const sent: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < o.messages; i++) {
    await sleep(Math.max(0, t0 + i * o.spacingMs - performance.now()));
    sent.push(pub.publish(topics[i % topics.length]!, kinds.spaced));
  }
  for (let b = 0; b < o.bursts; b++) {
    await sleep(1000);
    sent.push(...topics.map((t) => pub.publish(t, kinds.burst)));
  }
  await Promise.all(sent);
  const seqs = Array.from({ length: pub.seq - first }, (_, i) => first + i).filter((s) =>
    pub.stored.has(s),
  );
  await until(() => seqs.every((s) => fleet.received.has(s)), 30_000, 100);
  await sleep(500); // a second copy of one would arrive now
  const sum = (kind: number) => {
    const p = percentiles(fleet.recorder(kind).samples);
    return {
      published: fleet.recorder(kind).samples.length,
      p50Ms: round(p.p50, 2),
      p99Ms: round(p.p99, 2),
      maxMs: round(p.max, 2),
    };
  };
  const pp = percentiles(pub.publishLatency.samples.slice(publish0));
  const received = seqs.filter((s) => fleet.received.has(s)).length;
  return {
    oneAtATime: { ...sum(kinds.spaced), published: o.messages },
    burst: { ...sum(kinds.burst), published: o.bursts * topics.length },
    publishP50Ms: round(pp.p50, 2),
    publishP99Ms: round(pp.p99, 2),
    received,
    missing: seqs.length - received,
    duplicates: seqs.filter((s) => (fleet.received.get(s) ?? 0) > 1).length,
    answeredWithMessages: fleet.counts.withMessages - counts0.withMessages,
    earlyEmpty: fleet.counts.earlyEmpty - counts0.earlyEmpty,
    publishErrors: pub.errors - errors0,
  };
}

function latencyLine(l: LatencyResult): string {
  return (
    `one at a time p50 ${l.oneAtATime.p50Ms} ms p99 ${l.oneAtATime.p99Ms} ms max ${l.oneAtATime.maxMs}; ` +
    `to every group at once p50 ${l.burst.p50Ms} p99 ${l.burst.p99Ms} max ${l.burst.maxMs}; ` +
    `publish call p50 ${l.publishP50Ms} p99 ${l.publishP99Ms}; received ${l.received}, missing ${l.missing}, ` +
    `twice ${l.duplicates}, answers with messages ${l.answeredWithMessages}, early 204s ${l.earlyEmpty}` +
    (l.publishErrors ? `, publish errors ${l.publishErrors}` : "")
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions();
  const servers = await benchServers("vqs-bench-lp-");
  const endTimeLimit = boundRun(servers.cleanup, (o.quick ? 5 : 12) * 60_000, log);
  await mkdir(join(BENCH_DIR, "results"), { recursive: true });
  await writeFile(GATEWAY_LOG, "");
  await writeFile(NATS_LOG, "");
  const startedAt = new Date();
  try {
    const selfLimit = openFilesLimit("self");
    if (o.waiters < o.wantedWaiters) {
      log(
        `open-files limit ${selfLimit}: ${o.waiters} waiters instead of ${o.wantedWaiters} ` +
          `(each needs a socket in this process and in the gateway)`,
      );
    }
    const { nats, gateway: gw } = await servers.start({
      natsStore: join(servers.root, "store"),
      natsLog: NATS_LOG,
      logFile: GATEWAY_LOG,
    });
    const issuer = servers.issuer;
    const nc: NatsConnection = await connect({ servers: nats.url, name: "vqs-bench-long-poll" });
    servers.onCleanup(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const procs: Processes = { gatewayPids: [gw.pid], natsPid: nats.pid };
    const machine = {
      ...(await machineInfo(nats)),
      openFilesLimit: { loadGenerator: selfLimit, gateway: openFilesLimit(gw.pid) },
    };
    log(
      `vqs long-poll bench (${o.quick ? "quick" : "full"}): ${o.waiters} waiters over ${o.groups} groups, ` +
        `Vqs-Wait-Seconds ${o.waitSeconds}; ${machine.cores} cores, Node ${machine.node}, nats-server ` +
        `${machine.nats}; open files limit ${selfLimit} (gateway ${machine.openFilesLimit.gateway}); ` +
        `load average ${machine.loadAverageAtStart}`,
    );

    // Topics and groups: one message each (creates the stream), received and acknowledged.
    const topics = Array.from({ length: o.groups }, (_, i) => `lp-${String(i).padStart(4, "0")}`);
    const setupClient = createHttpClient([gw.url]);
    const setup = new GatewayApi(setupClient, issuer.token);
    const pub = new Publisher(setup);
    for (const t of topics) {
      await pub.publish(t, KIND.warmUp);
      for (let i = 0; i < 5; i++) {
        const res = await setup.receive(t, GROUP, 10);
        if (res.status !== 200) break;
        for (const p of parseMultipart(res.contentType, res.body)) {
          await setup.ack(t, GROUP, p.headers.get("vqs-receipt-handle") ?? "");
        }
      }
    }
    if (pub.errors > 0) throw new Error(`setup: ${pub.errors} publishes failed`);

    // Warm-up: a small fleet long-polls and gets messages; then it goes away and the
    // groups' feeds close (5 s without waiters).
    log("warm-up");
    {
      const warm = new ReceiverFleet(
        gw.url,
        issuer.token,
        topics,
        Math.min(o.waiters, 4 * o.groups),
        {
          waitSeconds: o.waitSeconds,
          maxMessages: 1,
        },
      );
      await warm.connect(64);
      warm.start();
      await until(async () => ((await gw.waiting()) ?? 0) >= warm.receivers.length, 20_000);
      for (let i = 0; i < 2 * topics.length; i++) await pub.publish(topics[i % topics.length]!, 0);
      await until(() => warm.received.size >= 2 * topics.length, 10_000);
      await warm.stop();
    }
    setupClient.close();
    // The groups' feeds close 5 s after their last waiter left; their pulls end at the server
    // when they expire (15 s).
    await until(async () => (await natsState(nats, jsm)).pullsHeld === 0, 30_000, 1000);

    // No receivers at all.
    const m0 = await gatewayMemory(gw);
    const n0 = await natsState(nats, jsm);
    const idle0 = await cpuWindow(procs, nats, null, (o.quick ? 2 : 5) * 1000);
    log(
      `no receivers: gateway RSS ${m0.rssMB} MB heap ${m0.heapUsedMB} MB; gateway NATS subs ${n0.gatewaySubscriptions}, pulls held ${n0.pullsHeld}; ${cpuLine(idle0)}`,
    );

    // Every receiver connected (one immediate receive each), the connections idle.
    const fleet = new ReceiverFleet(gw.url, issuer.token, topics, o.waiters, {
      waitSeconds: o.waitSeconds,
      maxMessages: 1,
    });
    servers.onCleanup(() => fleet.stop());
    let t = performance.now();
    await fleet.connect(256);
    const connectSeconds = round((performance.now() - t) / 1000, 1);
    await sleep(500);
    const m1 = await gatewayMemory(gw);
    log(
      `${o.waiters} connections open, idle (${connectSeconds} s to open): gateway RSS ${m1.rssMB} MB heap ${m1.heapUsedMB} MB, open files ${m1.openFiles}`,
    );

    // Long polling: all start waiting.
    fleet.mode = "long";
    t = performance.now();
    fleet.start();
    const allWaiting = await until(async () => ((await gw.waiting()) ?? 0) >= o.waiters, 120_000);
    const rampSeconds = round((performance.now() - t) / 1000, 1);
    const waitingNow = (await gw.waiting()) ?? 0;
    const m2 = await gatewayMemory(gw);
    const n2 = await natsState(nats, jsm);
    log(
      `${waitingNow} waiting after ${rampSeconds} s${allWaiting ? "" : " (not all!)"}: gateway RSS ${m2.rssMB} MB heap ${m2.heapUsedMB} MB external ${m2.externalMB} MB, open files ${m2.openFiles}; ` +
        `gateway NATS subs ${n2.gatewaySubscriptions} (server ${n2.serverSubscriptions}); pulls held ${n2.pullsHeld} on ${n2.consumers} consumers (max ${n2.maxPullsPerConsumer}); NATS RSS ${n2.natsRssMB} MB`,
    );

    // Idle: everyone waits, nothing is published, and no wait ends inside the window.
    const firstExpiry = fleet.earliestSent() + o.waitSeconds * 1000;
    const idleMs = Math.min(o.idleSeconds * 1000, firstExpiry - performance.now() - 1000);
    const idle = idleMs >= 1000 ? await cpuWindow(procs, nats, fleet, idleMs) : null;
    log(
      idle
        ? `all waiting, nothing published (${idle.seconds} s): ${cpuLine(idle)}`
        : "all waiting: no time left before the first wait ends; no idle window",
    );

    // The waits end and every receiver asks again; then messages are published while they wait.
    t = performance.now();
    await until(
      async () =>
        fleet.sentSince("long", t) >= o.waiters && ((await gw.waiting()) ?? 0) >= o.waiters,
      (o.waitSeconds + 30) * 1000,
    );
    log(`every wait ended and was renewed (${round((performance.now() - t) / 1000, 1)} s)`);
    const longLatency = await latencyPhase(o, fleet, pub, topics, {
      spaced: KIND.longSpaced,
      burst: KIND.longBurst,
    });
    log(`long polling, publish→receive: ${latencyLine(longLatency)}`);

    // Steady state: one whole wait cycle, the renewals (one per receiver per wait) included.
    const steady = await cpuWindow(procs, nats, fleet, o.waitSeconds * 1000);
    const n3 = await natsState(nats, jsm);
    log(
      `steady long polling (${steady.seconds} s, one wait cycle): ${cpuLine(steady)}; pulls held ${n3.pullsHeld} (max ${n3.maxPullsPerConsumer})`,
    );

    // Everyone hangs up; what is left after the groups' feeds closed.
    await fleet.stop();
    await sleep(7000);
    const m5 = await gatewayMemory(gw);
    const n5 = await natsState(nats, jsm);
    const leftWaiting = await gw.waiting();
    log(
      `after all hung up: waiting ${leftWaiting}, gateway RSS ${m5.rssMB} MB heap ${m5.heapUsedMB} MB; gateway NATS subs ${n5.gatewaySubscriptions}, pulls held ${n5.pullsHeld}`,
    );

    // Per receiver actually waiting at the reading (on a starved machine not all get there).
    const perWaiterKB = (a: Memory, b: Memory, k: keyof Memory, n = waitingNow) =>
      round(((Number(b[k]) - Number(a[k])) * 1024) / Math.max(1, n), 2);
    const usPerReceive = (w: CpuWindow) =>
      w.receivesPerSec > 0 ? round((w.cpu.gatewayCpu * 1e4) / w.receivesPerSec, 0) : null;
    const summary = {
      waiters: o.waiters,
      waiting: waitingNow,
      groups: o.groups,
      waitSeconds: o.waitSeconds,
      memoryPerWaiterKB: {
        heap: perWaiterKB(m0, m2, "heapUsedMB"),
        rss: perWaiterKB(m0, m2, "rssMB"),
        external: perWaiterKB(m0, m2, "externalMB"),
        connectionOnlyHeap: perWaiterKB(m0, m1, "heapUsedMB", o.waiters),
        connectionOnlyRss: perWaiterKB(m0, m1, "rssMB", o.waiters),
      },
      gatewayNatsSubscriptions: { none: n0.gatewaySubscriptions, waiting: n2.gatewaySubscriptions },
      pullsHeld: {
        waiting: n2.pullsHeld,
        steady: n3.pullsHeld,
        maxPerConsumer: Math.max(n2.maxPullsPerConsumer, n3.maxPullsPerConsumer),
        consumers: n2.consumers,
      },
      latency: longLatency,
      cpu: { noReceivers: idle0, waitingIdle: idle, longPollSteady: steady },
      gatewayCpuUsPerReceive: usPerReceive(steady),
      emptyLongPolls: emptyLongPolls(fleet),
      afterHangUp: { waiting: leftWaiting, memory: m5, nats: n5 },
    };
    const results = {
      tool: "vqs bench:long-poll (bench/long-poll.ts)",
      mode: o.quick ? "quick" : "full",
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      options: { ...o, out: relative(REPO_DIR, o.out) },
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      phases: {
        connectSeconds,
        rampSeconds,
        memory: { noReceivers: m0, connectedIdle: m1, waiting: m2, afterHangUp: m5 },
        nats: { noReceivers: n0, waiting: n2, steady: n3, afterHangUp: n5 },
      },
      summary,
      errors: { count: fleet.counts.errors, kinds: Object.fromEntries(fleet.errorKinds) },
    };
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, JSON.stringify(results, null, 2) + "\n");
    process.stdout.write(report(results.startedAt, machine, summary, o) + "\n");
    process.stdout.write(
      `Results: ${relative(REPO_DIR, o.out)}; receiver errors: ${fleet.counts.errors} ${JSON.stringify(results.errors.kinds)}\n`,
    );
  } finally {
    endTimeLimit();
    await servers.cleanup();
  }
}

/** Long polls answered 204: how long each took, against the Vqs-Wait-Seconds asked. */
function emptyLongPolls(fleet: ReceiverFleet): EmptyLongPolls {
  const samples = fleet.emptyLongPolls.samples;
  const p = percentiles(samples);
  const min = samples.reduce((a, b) => Math.min(a, b), Infinity);
  return {
    count: samples.length,
    p50Seconds: round(p.p50 / 1000, 2),
    p99Seconds: round(p.p99 / 1000, 2),
    minSeconds: round(min / 1000, 2),
    maxSeconds: round(p.max / 1000, 2),
  };
}

interface EmptyLongPolls {
  readonly count: number;
  readonly p50Seconds: number;
  readonly p99Seconds: number;
  readonly minSeconds: number;
  readonly maxSeconds: number;
}

type Summary = {
  waiters: number;
  groups: number;
  waitSeconds: number;
  memoryPerWaiterKB: Record<string, number>;
  gatewayNatsSubscriptions: { none: number; waiting: number };
  pullsHeld: { waiting: number; steady: number; maxPerConsumer: number; consumers: number };
  latency: LatencyResult;
  cpu: { noReceivers: CpuWindow; waitingIdle: CpuWindow | null; longPollSteady: CpuWindow };
  gatewayCpuUsPerReceive: number | null;
  emptyLongPolls: EmptyLongPolls;
};

/** The Markdown table docs/performance.md takes. */
function report(
  at: string,
  machine: { cores: number; node: string; nats: string; loadAverageAtStart: number },
  s: Summary,
  o: Options,
): string {
  const m = s.memoryPerWaiterKB;
  const c = (w: CpuWindow | null) =>
    w
      ? `${w.cpu.gatewayCpu} / ${w.cpu.natsCpu} / ${w.cpu.clientCpu} (other ${w.cpu.otherCpu}, steal ${w.cpu.stealCpu})`
      : "n/a";
  const lat = (l: LatencyResult["oneAtATime"]) => `${l.p50Ms} / ${l.p99Ms} (max ${l.maxMs})`;
  const L = s.latency;
  const rows: [string, string][] = [
    ["waiters / groups / Vqs-Wait-Seconds", `${s.waiters} / ${s.groups} / ${s.waitSeconds}`],
    [
      "gateway memory per waiter (heap / RSS, after GC)",
      `${m.heap} KB / ${m.rss} KB (the idle connection alone: ${m.connectionOnlyHeap} KB / ${m.connectionOnlyRss} KB)`,
    ],
    [
      "NATS subscriptions of the gateway (none waiting → all waiting)",
      `${s.gatewayNatsSubscriptions.none} → ${s.gatewayNatsSubscriptions.waiting}`,
    ],
    [
      `pull requests held (num_waiting over ${s.pullsHeld.consumers} consumers)`,
      `${s.pullsHeld.waiting} after the ramp, ${s.pullsHeld.steady} in steady state; at most ${s.pullsHeld.maxPerConsumer} per consumer`,
    ],
    [
      `publish→receive ms p50 / p99, one message at a time (${o.messages}, ${o.spacingMs} ms apart)`,
      lat(L.oneAtATime),
    ],
    [
      `publish→receive ms p50 / p99, one message to every group at once (${o.bursts} × ${s.groups})`,
      lat(L.burst),
    ],
    [
      "wake-ups: answers with a message / messages; early 204s; missing; twice",
      `${L.answeredWithMessages} / ${L.oneAtATime.published + L.burst.published}; ${L.earlyEmpty}; ${L.missing}; ${L.duplicates}`,
    ],
    [
      `long polls answered 204: duration s p50 / p99 (min – max), Vqs-Wait-Seconds ${s.waitSeconds}`,
      `${s.emptyLongPolls.count}: ${s.emptyLongPolls.p50Seconds} / ${s.emptyLongPolls.p99Seconds} (${s.emptyLongPolls.minSeconds} – ${s.emptyLongPolls.maxSeconds})`,
    ],
    ["CPU % gw / NATS / load generator: no receivers", c(s.cpu.noReceivers)],
    [
      "… all waiting, nothing published (no wait ends in the window)",
      `${c(s.cpu.waitingIdle)}; ${s.cpu.waitingIdle?.receivesPerSec ?? "n/a"} receives/s, NATS ${s.cpu.waitingIdle?.natsOutMsgsPerSec ?? "n/a"} msgs/s out`,
    ],
    [
      `… long polling, one whole ${s.waitSeconds} s cycle (each wait renewed once)`,
      `${c(s.cpu.longPollSteady)}; ${s.cpu.longPollSteady.receivesPerSec} receives/s`,
    ],
    ["gateway CPU per renewed long poll (µs)", String(s.gatewayCpuUsPerReceive)],
  ];
  return [
    "",
    `vqs bench:long-poll, ${at}: ${machine.cores} cores, Node ${machine.node}, nats-server ${machine.nats}, load average at start ${machine.loadAverageAtStart}`,
    "",
    "| figure | measured |",
    "| --- | --- |",
    ...rows.map(([a, b]) => `| ${a} | ${b} |`),
    "",
  ].join("\n");
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

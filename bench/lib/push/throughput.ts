// Push throughput against polling, in paired slices: one topic with a deep backlog and three
// consumer groups on it, each reading the whole stream: "plain" (pushed to a node:http endpoint
// answering 200, `autoAck`), "callback" (pushed to the real client's handleCallback, which
// acknowledges through the API) and "poll" (receive 10 + ack each, by the load generator). Only
// one group runs at a time; the run moves between them in slices (poll, plain, callback, then
// callback, plain, poll, ...), so each round's three slices see nearly the same machine, and a
// round's ratios (plain/poll, callback/poll) are what carries over. A push group is switched on
// and off through its settings (PUT with `push`, then PUT `{}`), as an operator would.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { gwReceiveOp, type GatewayApi } from "../gw.js";
import {
  loadAverage,
  sampleMachine,
  sampleProc,
  type MachineSample,
  type ProcSample,
} from "../proc.js";
import type { PushEndpoint } from "./endpoints.js";
import { nowMs } from "./stamp.js";
import { fillStream, headersLike, type RawStream } from "../raw.js";
import { Window } from "../runner.js";
import { Recorder, sleep } from "../stats.js";

export type Mode = "poll" | "plain" | "callback";
export const MODES: readonly Mode[] = ["poll", "plain", "callback"];

export interface ThroughputOptions {
  /** push.maxConcurrency of the push groups = receives in flight of the poller. */
  readonly levels: readonly number[];
  /** Rounds of three slices (one per group) per level. */
  readonly rounds: number;
  readonly sliceMs: number;
  /** After a group is switched on (and its first messages seen), before its slice starts. */
  readonly settleMs: number;
  /** Warm-up per group before the first level (V8 optimises the push path after thousands). */
  readonly warmupMs: number;
  readonly payload: Buffer;
}

export interface ThroughputContext {
  readonly api: GatewayApi;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Every gateway process (all of them push a pushed group): their CPU is added up. */
  readonly gatewayPids: readonly number[];
  readonly natsPid: number;
  readonly plain: PushEndpoint;
  readonly callback: PushEndpoint;
  readonly log: (line: string) => void;
}

/** One measured slice of one group. */
export interface Slice {
  readonly mode: Mode;
  readonly msgsPerSec: number;
  readonly messages: number;
  readonly seconds: number;
  /** Pushes the endpoint did not answer 2xx, or polled acks that failed. */
  readonly errors: number;
  /** CPU seconds in the slice: the gateway, the consumer side (endpoint or load generator), NATS,
   * the load generator (this process: the poller, or only the run's control while pushing) and
   * the whole machine (every process, other helpers' too). */
  readonly cpu: {
    readonly gateway: number;
    readonly consumer: number;
    readonly nats: number;
    readonly generator: number;
    readonly machine: number;
  };
  /** Machine busy and hypervisor steal, % of one core. */
  readonly machineBusy: number;
  readonly steal: number;
}

export interface ModeSummary {
  /** Median of the slices' rates. */
  readonly msgsPerSec: number;
  readonly slices: readonly number[];
  /** CPU per message over all slices, µs. */
  readonly gatewayUsPerMsg: number;
  readonly consumerUsPerMsg: number;
  readonly natsUsPerMsg: number;
  /** Each process's CPU over the slices, % of one core (100 = a core's whole time): which
   * process is at its core's limit, and what the machine had left. */
  readonly cpuPercent: {
    readonly gateway: number;
    readonly consumer: number;
    readonly nats: number;
    readonly generator: number;
    readonly machine: number;
  };
  readonly errors: number;
}

export interface LevelResult {
  readonly concurrency: number;
  readonly poll: ModeSummary;
  readonly plain: ModeSummary;
  readonly callback: ModeSummary;
  /** Medians of the rounds' ratios, and each round's. */
  readonly ratio: {
    readonly plainToPoll: number;
    readonly callbackToPoll: number;
    readonly plainPairs: readonly number[];
    readonly callbackPairs: readonly number[];
  };
  readonly machineBusy: number;
  readonly steal: number;
  /** The machine's load average (1 min) when the level ended. */
  readonly loadAverage: number;
  /** Set when a group's backlog may have run out during a slice. */
  readonly note?: string;
}

const TOPIC = "bench-push";
const GROUP: Record<Mode, string> = { poll: "poll", plain: "plain", callback: "callback" };
/** Switching a group on or off waits at most this long for the pushes to start or stop. */
const SWITCH_TIMEOUT_MS = 5_000;
/** A rate to size the backlog with before any has been measured (above those seen here). */
const FIRST_GUESS_RATE = 6_000;

export async function pushThroughput(
  ctx: ThroughputContext,
  o: ThroughputOptions,
): Promise<LevelResult[]> {
  const stream = await topicStream(ctx, TOPIC, o.payload);
  const poller = new Poller(ctx.api);
  const consumed = (m: Mode): Promise<number> =>
    m === "poll"
      ? Promise.resolve(poller.acked)
      : endpointOf(ctx, m)
          .read()
          .then((r) => r.ok);
  let fastest = FIRST_GUESS_RATE;
  // Each group's active time at a level: its slices plus switching and settling, generously.
  const activeSeconds = (slices: number) => (slices * (o.sliceMs + o.settleMs + 1500)) / 1000;
  /** What the group that has consumed most still has before it, messages. */
  const least = async () => {
    const info = await ctx.jsm.streams.info(stream.stream);
    let min = Infinity;
    for (const m of MODES) min = Math.min(min, info.state.last_seq - (await consumed(m)));
    return min;
  };
  const topUp = async (slices: number) => {
    const need = Math.ceil(fastest * activeSeconds(slices) * 1.5);
    const have = await least();
    if (have >= need) return;
    const f = await fillStream(ctx.js, stream, o.payload, need - have, 180, stream.makeHeaders);
    ctx.log(`  push backlog: +${f.stored.toLocaleString("en-US")} in ${f.seconds.toFixed(1)} s`);
  };

  const session = new Session(ctx, poller);
  try {
    // Warm-up, not recorded: each group twice, at 16 in flight.
    await topUp(4);
    ctx.log(`push: warm-up, ${(o.warmupMs / 1000).toFixed(1)} s per group, twice`);
    for (const m of [...MODES, ...MODES]) {
      await session.on(m, 16);
      await sleep(o.warmupMs);
      await session.off(m);
    }
    const results: LevelResult[] = [];
    for (const n of o.levels) {
      await topUp(o.rounds);
      const slices: Slice[][] = [];
      for (let r = 0; r < o.rounds; r++) {
        const order = r % 2 === 0 ? MODES : [...MODES].reverse();
        const round: Slice[] = [];
        for (const m of order) {
          await session.on(m, n);
          await sleep(o.settleMs);
          round.push(await session.measure(m, o.sliceMs));
          await session.off(m);
        }
        slices.push(round);
      }
      // A group that consumed the whole stream ran out within a slice: its rate is too low.
      const level = summarizeLevel(n, slices, (await least()) <= 0);
      fastest = Math.max(fastest, ...MODES.map((m) => level[m].msgsPerSec));
      ctx.log(
        `  push x${n}: plain ${level.plain.msgsPerSec} msg/s (gw ${level.plain.gatewayUsPerMsg} µs/msg), ` +
          `callback ${level.callback.msgsPerSec} (gw ${level.callback.gatewayUsPerMsg} µs/msg), ` +
          `poll ${level.poll.msgsPerSec} (gw ${level.poll.gatewayUsPerMsg} µs/msg); ` +
          `plain/poll ${level.ratio.plainToPoll}, callback/poll ${level.ratio.callbackToPoll}; ` +
          `machine busy ${level.machineBusy}%, steal ${level.steal}%, load ${level.loadAverage}`,
      );
      results.push(level);
    }
    return results;
  } finally {
    await session.close();
  }
}

function endpointOf(ctx: ThroughputContext, m: Exclude<Mode, "poll">): PushEndpoint {
  return m === "plain" ? ctx.plain : ctx.callback;
}

/** Switches groups on and off and measures slices. */
class Session {
  readonly #ctx: ThroughputContext;
  readonly #poller: Poller;
  #pushed: Exclude<Mode, "poll"> | null = null;

  constructor(ctx: ThroughputContext, poller: Poller) {
    this.#ctx = ctx;
    this.#poller = poller;
  }

  async on(m: Mode, n: number): Promise<void> {
    if (m === "poll") {
      this.#poller.start(n);
      return;
    }
    await pushOn(this.#ctx.api, TOPIC, GROUP[m], endpointOf(this.#ctx, m), n, m === "plain");
    this.#pushed = m;
  }

  async off(m: Mode): Promise<void> {
    if (m === "poll") {
      await this.#poller.stop();
      return;
    }
    await pushOff(this.#ctx.api, TOPIC, GROUP[m], endpointOf(this.#ctx, m));
    this.#pushed = null;
  }

  async measure(m: Mode, sliceMs: number): Promise<Slice> {
    const consumerPid = m === "poll" ? "self" : endpointOf(this.#ctx, m).pid;
    const read = async () => {
      const r =
        m === "poll"
          ? { at: nowMs(), ok: this.#poller.acked, failed: this.#poller.errors }
          : await endpointOf(this.#ctx, m).read();
      return {
        r,
        gateways: this.#ctx.gatewayPids.map((pid) => sampleProc(pid)),
        consumer: sampleProc(consumerPid),
        nats: sampleProc(this.#ctx.natsPid),
        generator: sampleProc("self"),
        machine: sampleMachine(),
      };
    };
    const a = await read();
    await sleep(sliceMs);
    const b = await read();
    const seconds = (b.r.at - a.r.at) / 1000;
    const messages = b.r.ok - a.r.ok;
    return {
      mode: m,
      msgsPerSec: seconds > 0 ? messages / seconds : 0,
      messages,
      seconds,
      errors: b.r.failed - a.r.failed,
      cpu: {
        gateway: a.gateways.reduce((sum, g, i) => sum + cpuSeconds(g, b.gateways[i] ?? null), 0),
        consumer: cpuSeconds(a.consumer, b.consumer),
        nats: cpuSeconds(a.nats, b.nats),
        generator: cpuSeconds(a.generator, b.generator),
        machine: a.machine && b.machine ? b.machine.busySeconds - a.machine.busySeconds : NaN,
      },
      machineBusy: machinePercent(a.machine, b.machine, seconds, "busySeconds"),
      steal: machinePercent(a.machine, b.machine, seconds, "stealSeconds"),
    };
  }

  /** Leaves no group pushed and the poller stopped. */
  async close(): Promise<void> {
    await this.#poller.stop();
    if (this.#pushed) await this.off(this.#pushed).catch(() => undefined);
  }
}

/**
 * Switches a group to push to `ep` (`maxConcurrency` n; `extra`: more settings, e.g.
 * `flowControl`) and waits for the first pushes: they start within the gateway's settings
 * look-up (50 ms) and a consumer update.
 */
export async function pushOn(
  api: GatewayApi,
  topic: string,
  group: string,
  ep: PushEndpoint,
  n: number,
  autoAck: boolean,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const before = (await ep.read()).ok;
  await putSettings(api, topic, group, {
    ...extra,
    push: { url: ep.url, maxConcurrency: n, autoAck },
  });
  const deadline = performance.now() + SWITCH_TIMEOUT_MS;
  while (performance.now() < deadline && (await ep.read()).ok === before) await sleep(10);
}

/** Switches a group back to polled; resolves once its endpoint has been quiet for 150 ms. */
export async function pushOff(
  api: GatewayApi,
  topic: string,
  group: string,
  ep: PushEndpoint,
): Promise<void> {
  await putSettings(api, topic, group, {});
  const deadline = performance.now() + SWITCH_TIMEOUT_MS;
  let last = (await ep.read()).ok;
  let quietSince = performance.now();
  while (performance.now() < deadline && performance.now() - quietSince < 150) {
    await sleep(25);
    const now = (await ep.read()).ok;
    if (now !== last) quietSince = performance.now();
    last = now;
  }
}

async function putSettings(
  api: GatewayApi,
  topic: string,
  group: string,
  body: unknown,
): Promise<void> {
  const res = await api.putSettings(topic, group, body);
  if (res.status !== 200) {
    throw new Error(`PUT settings of ${topic}/${group}: HTTP ${res.status} ${res.body.toString()}`);
  }
}

/**
 * The polled group: n workers running the main run's receive 10 + ack operation (gwReceiveOp)
 * while switched on; a receive that finds nothing waits 5 ms.
 */
class Poller {
  readonly #op: (w: number, window: Window) => Promise<void>;
  readonly #rec = { receive: new Recorder(100_000), ack: new Recorder(100_000) };
  /** Counts every operation: the slices read the counters at their edges. */
  readonly #window = new Window(0, 24 * 3600_000);
  #running = false;
  #workers: Promise<void>[] = [];

  constructor(api: GatewayApi) {
    this.#op = gwReceiveOp(api, TOPIC, GROUP.poll, this.#rec, 5);
  }

  get acked(): number {
    return this.#rec.ack.messages;
  }

  get errors(): number {
    return this.#rec.receive.errors + this.#rec.ack.errors;
  }

  start(n: number): void {
    this.#running = true;
    this.#workers = Array.from({ length: n }, async (_, w) => {
      // Bounded: a slice of a few seconds is far fewer operations than this.
      for (let i = 0; i < 10_000_000 && this.#running; i++) await this.#op(w, this.#window);
    });
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers.splice(0));
  }
}

function summarizeLevel(n: number, rounds: readonly Slice[][], ranOut: boolean): LevelResult {
  const of = (m: Mode) => rounds.flatMap((r) => r.filter((s) => s.mode === m));
  const rateIn = (r: readonly Slice[], m: Mode) => r.find((s) => s.mode === m)?.msgsPerSec ?? NaN;
  const pairs = (m: Mode) => rounds.map((r) => round2(rateIn(r, m) / rateIn(r, "poll")));
  const all = rounds.flat();
  const plainPairs = pairs("plain");
  const callbackPairs = pairs("callback");
  return {
    concurrency: n,
    poll: summarizeMode(of("poll")),
    plain: summarizeMode(of("plain")),
    callback: summarizeMode(of("callback")),
    ratio: {
      plainToPoll: median(plainPairs),
      callbackToPoll: median(callbackPairs),
      plainPairs,
      callbackPairs,
    },
    machineBusy: Math.round(median(all.map((s) => s.machineBusy))),
    steal: Math.round(median(all.map((s) => s.steal))),
    loadAverage: loadAverage(),
    ...(ranOut ? { note: "a group's backlog ran out in a slice" } : {}),
  };
}

function summarizeMode(slices: readonly Slice[]): ModeSummary {
  const messages = slices.reduce((s, x) => s + x.messages, 0);
  const us = (k: keyof Slice["cpu"]) =>
    messages > 0 ? Math.round((slices.reduce((s, x) => s + x.cpu[k], 0) / messages) * 1e6) : NaN;
  const seconds = slices.reduce((s, x) => s + x.seconds, 0);
  const pct = (k: keyof Slice["cpu"]) =>
    seconds > 0 ? Math.round((slices.reduce((s, x) => s + x.cpu[k], 0) / seconds) * 100) : NaN;
  return {
    msgsPerSec: Math.round(median(slices.map((s) => s.msgsPerSec))),
    slices: slices.map((s) => Math.round(s.msgsPerSec)),
    gatewayUsPerMsg: us("gateway"),
    consumerUsPerMsg: us("consumer"),
    natsUsPerMsg: us("nats"),
    cpuPercent: {
      gateway: pct("gateway"),
      consumer: pct("consumer"),
      nats: pct("nats"),
      generator: pct("generator"),
      machine: pct("machine"),
    },
    errors: slices.reduce((s, x) => s + x.errors, 0),
  };
}

export function median(a: readonly number[]): number {
  const s = a.filter(Number.isFinite).sort((x, y) => x - y);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : round2((s[mid - 1]! + s[mid]!) / 2);
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

function cpuSeconds(a: ProcSample | null, b: ProcSample | null): number {
  return a && b ? b.cpuSeconds - a.cpuSeconds : NaN;
}

function machinePercent(
  a: MachineSample | null,
  b: MachineSample | null,
  seconds: number,
  k: keyof MachineSample,
): number {
  return a && b && seconds > 0 ? ((b[k] - a[k]) / seconds) * 100 : NaN;
}

/** A gateway topic and its stream (made by a first publish), for writing backlog into it. */
export async function topicStream(
  ctx: Pick<ThroughputContext, "api" | "jsm">,
  topic: string,
  payload: Buffer,
): Promise<RawStream & { readonly makeHeaders: ReturnType<typeof headersLike> }> {
  const res = await ctx.api.publish(topic, payload);
  if (res.status !== 201) throw new Error(`publish to ${topic}: HTTP ${res.status}`);
  let pages = 0;
  for await (const info of ctx.jsm.streams.list()) {
    if (++pages > 100_000) break;
    let d: { topic?: string } = {};
    try {
      d = JSON.parse(info.config.description ?? "{}") as { topic?: string };
    } catch {
      continue;
    }
    if (d.topic !== topic) continue;
    const last = await ctx.jsm.streams.getMessage(info.config.name, { seq: info.state.last_seq });
    if (!last) throw new Error(`stream ${info.config.name}: the first message is missing`);
    // Stored as the gateway stores them (headers copied, fresh nonce): queue messages to it.
    return {
      stream: info.config.name,
      subject: last.subject,
      makeHeaders: headersLike(last.header),
    };
  }
  throw new Error(`no stream describes topic ${topic}`);
}

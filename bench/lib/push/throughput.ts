// Push throughput against polling, in paired slices: one topic with a deep backlog and two
// consumer groups on it, each reading the whole stream: "plain" (pushed to a node:http endpoint
// answering 200, `autoAck`) and "poll" (receive 10 + ack each, by the load generator). Only one
// group runs at a time; the run moves between them in slices (poll, plain, then plain, poll, ...),
// so each round's two slices see nearly the same machine, and a round's ratio plain/poll is what
// carries over. The push group is switched on and off through its settings (PUT with `push`, then
// PUT `{}`), as an operator would.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { gwReceiveOp, topicStream, type GatewayApi } from "../gw.js";
import { loadAverage, sampleProc } from "../proc.js";
import type { PushEndpoint } from "./endpoints.js";
import { nowMs } from "./stamp.js";
import { fillStream } from "../raw.js";
import { Window } from "../runner.js";
import { median, Recorder, round, sleep } from "../stats.js";

export type Mode = "poll" | "plain";
const MODES: readonly Mode[] = ["poll", "plain"];

export interface ThroughputOptions {
  /** push.maxConcurrency of the push group = receives in flight of the poller. */
  readonly levels: readonly number[];
  /** Rounds of two slices (one per group) per level. */
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
  readonly gatewayPid: number;
  readonly plain: PushEndpoint;
  readonly log: (line: string) => void;
}

/** One measured slice of one group. */
interface Slice {
  readonly mode: Mode;
  readonly msgsPerSec: number;
  readonly messages: number;
  /** Pushes the endpoint did not answer 2xx, or polled acks that failed. */
  readonly errors: number;
  /** The gateway's CPU seconds in the slice. */
  readonly gatewayCpu: number;
}

export interface ModeSummary {
  /** Median of the slices' rates. */
  readonly msgsPerSec: number;
  /** The gateway's CPU per message over all slices, µs. */
  readonly gatewayUsPerMsg: number;
  readonly errors: number;
}

export interface LevelResult {
  readonly concurrency: number;
  readonly poll: ModeSummary;
  readonly plain: ModeSummary;
  /** Median of the rounds' ratios plain/poll, and each round's. */
  readonly plainToPoll: number;
  readonly pairs: readonly number[];
  /** The machine's load average (1 min) when the level ended. */
  readonly loadAverage: number;
  /** Set when a group's backlog may have run out during a slice. */
  readonly note?: string;
}

const TOPIC = "bench-push";
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
  const consumed = async (m: Mode) => (m === "poll" ? poller.acked : (await ctx.plain.read()).ok);
  let fastest = FIRST_GUESS_RATE;
  /** What the group that has consumed most still has before it, messages. */
  const least = async () => {
    const last = (await ctx.jsm.streams.info(stream.stream)).state.last_seq;
    return Math.min(last - (await consumed("poll")), last - (await consumed("plain")));
  };
  const topUp = async (slices: number) => {
    // Each group's active time: its slices plus switching and settling, generously.
    const need = Math.ceil((fastest * slices * (o.sliceMs + o.settleMs + 1500) * 1.5) / 1000);
    const have = await least();
    if (have >= need) return;
    const f = await fillStream(ctx.js, stream, o.payload, need - have, 180, stream.makeHeaders);
    ctx.log(`  push backlog: +${f.stored.toLocaleString("en-US")} in ${f.seconds.toFixed(1)} s`);
  };
  const on = (m: Mode, n: number) =>
    m === "poll" ? poller.start(n) : pushOn(ctx.api, TOPIC, m, ctx.plain, n, true);
  const off = (m: Mode) => (m === "poll" ? poller.stop() : pushOff(ctx.api, TOPIC, m, ctx.plain));
  const measure = async (m: Mode): Promise<Slice> => {
    const read = async () => ({
      r:
        m === "poll"
          ? { at: nowMs(), ok: poller.acked, failed: poller.errors }
          : await ctx.plain.read(),
      gateway: sampleProc(ctx.gatewayPid),
    });
    const a = await read();
    await sleep(o.sliceMs);
    const b = await read();
    const seconds = (b.r.at - a.r.at) / 1000;
    const messages = b.r.ok - a.r.ok;
    return {
      mode: m,
      msgsPerSec: seconds > 0 ? messages / seconds : 0,
      messages,
      errors: b.r.failed - a.r.failed,
      gatewayCpu: a.gateway && b.gateway ? b.gateway.cpuSeconds - a.gateway.cpuSeconds : NaN,
    };
  };

  try {
    // Warm-up, not recorded: each group twice, at 16 in flight.
    await topUp(4);
    ctx.log(`push: warm-up, ${(o.warmupMs / 1000).toFixed(1)} s per group, twice`);
    for (const m of [...MODES, ...MODES]) {
      await on(m, 16);
      await sleep(o.warmupMs);
      await off(m);
    }
    const results: LevelResult[] = [];
    for (const n of o.levels) {
      await topUp(o.rounds);
      const rounds: Slice[][] = [];
      for (let r = 0; r < o.rounds; r++) {
        const slices: Slice[] = [];
        for (const m of r % 2 === 0 ? MODES : [...MODES].reverse()) {
          await on(m, n);
          await sleep(o.settleMs);
          slices.push(await measure(m));
          await off(m);
        }
        rounds.push(slices);
      }
      // A group that consumed the whole stream ran out within a slice: its rate is too low.
      const level = summarizeLevel(n, rounds, (await least()) <= 0);
      fastest = Math.max(fastest, level.plain.msgsPerSec, level.poll.msgsPerSec);
      ctx.log(
        `  push x${n}: plain ${level.plain.msgsPerSec} msg/s (gw ${level.plain.gatewayUsPerMsg} µs/msg), ` +
          `poll ${level.poll.msgsPerSec} (gw ${level.poll.gatewayUsPerMsg} µs/msg); ` +
          `plain/poll ${level.plainToPoll}; load ${level.loadAverage}`,
      );
      results.push(level);
    }
    return results;
  } finally {
    await poller.stop();
    await off("plain").catch(() => undefined);
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

async function putSettings(api: GatewayApi, topic: string, group: string, body: unknown) {
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
    this.#op = gwReceiveOp(api, TOPIC, "poll", this.#rec, 5);
  }

  get acked(): number {
    return this.#rec.ack.messages;
  }

  get errors(): number {
    return this.#rec.receive.errors + this.#rec.ack.errors;
  }

  start(n: number): Promise<void> {
    this.#running = true;
    this.#workers = Array.from({ length: n }, async (_, w) => {
      // Bounded: a slice of a few seconds is far fewer operations than this.
      for (let i = 0; i < 10_000_000 && this.#running; i++) await this.#op(w, this.#window);
    });
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers.splice(0));
  }
}

function summarizeLevel(n: number, rounds: readonly Slice[][], ranOut: boolean): LevelResult {
  const rateIn = (r: readonly Slice[], m: Mode) => r.find((s) => s.mode === m)?.msgsPerSec ?? NaN;
  const pairs = rounds.map((r) => round(rateIn(r, "plain") / rateIn(r, "poll"), 2));
  const summary = (m: Mode): ModeSummary => {
    const slices = rounds.flatMap((r) => r.filter((s) => s.mode === m));
    const messages = slices.reduce((s, x) => s + x.messages, 0);
    const cpu = slices.reduce((s, x) => s + x.gatewayCpu, 0);
    return {
      msgsPerSec: Math.round(median(slices.map((s) => s.msgsPerSec))),
      gatewayUsPerMsg: messages > 0 ? Math.round((cpu / messages) * 1e6) : NaN,
      errors: slices.reduce((s, x) => s + x.errors, 0),
    };
  };
  return {
    concurrency: n,
    poll: summary("poll"),
    plain: summary("plain"),
    plainToPoll: median(pairs),
    pairs,
    loadAverage: loadAverage(),
    ...(ranOut ? { note: "a group's backlog ran out in a slice" } : {}),
  };
}

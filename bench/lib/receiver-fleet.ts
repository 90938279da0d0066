// Many receivers, each on its own keep-alive connection to one gateway, each looping over
// ReceiveMessages with Vqs-Wait-Seconds (long polling). Messages carry their publish time
// and a sequence number (see stampMessage), so the fleet records publish→receive latency and how
// often each message arrived. Used by bench/long-poll.ts.
import { GatewayApi } from "./gw.js";
import { createHttpClient, parseMultipart, type HttpClient } from "./http-client.js";
import { errorKind, sentAt } from "./raw.js";
import { Recorder, sleep } from "./stats.js";

/** Every receiver is on group GROUP of one of the topics. */
export const GROUP = "workers";
/** Bounds each receiver's loop (a long run at 10 receives/s does not come near it). */
const MAX_ROUNDS = 1_000_000;
/** A receive that fails is tried again after this pause (never in a tight loop). */
const ERROR_PAUSE_MS = 100;

export type Mode = "long" | "immediate" | "stop";

export interface Receiver {
  readonly index: number;
  readonly topic: string;
  readonly client: HttpClient;
  readonly api: GatewayApi;
  /** When its current (or last) receive was sent, performance.now(). */
  sentAt: number;
  /** The mode of its current (or last) receive; null before the first. */
  mode: Mode | null;
}

export interface FleetCounts {
  /** Receives answered (any status). */
  receives: number;
  /** Answered 200 (with messages). */
  withMessages: number;
  /** Answered 204. */
  empty: number;
  /** Long polls answered 204 more than a second before their wait was over. */
  earlyEmpty: number;
  acks: number;
  errors: number;
}

/** A message's 16 bytes: publish time (performance.now(), this process), sequence, kind. */
export function stampMessage(seq: number, kind: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeDoubleLE(performance.now(), 0);
  b.writeUInt32LE(seq, 8);
  b.writeUInt8(kind, 12);
  return b;
}

export class ReceiverFleet {
  mode: Mode = "long";
  readonly receivers: Receiver[];
  readonly counts: FleetCounts = {
    receives: 0,
    withMessages: 0,
    empty: 0,
    earlyEmpty: 0,
    acks: 0,
    errors: 0,
  };
  readonly errorKinds = new Map<string, number>();
  /** Receptions of each message by sequence number (more than 1: delivered twice). */
  readonly received = new Map<number, number>();
  /** How long each long poll answered 204 took (the wait plus the immediate pull before it). */
  readonly emptyLongPolls = new Recorder(100_000);
  /** Publish→receive latency by the message's kind byte. */
  readonly latency = new Map<number, Recorder>();
  readonly #waitSeconds: number;
  readonly #maxMessages: number;
  readonly #auth: string;
  #loops: Promise<void>[] = [];

  constructor(
    url: string,
    token: string,
    topics: readonly string[],
    count: number,
    o: { waitSeconds: number; maxMessages: number },
  ) {
    this.#waitSeconds = o.waitSeconds;
    this.#maxMessages = o.maxMessages;
    // One client (one keep-alive agent) per receiver: its requests follow one another, so it
    // holds exactly one connection.
    this.receivers = Array.from({ length: count }, (_, index) => {
      const client = createHttpClient([url]);
      return {
        index,
        topic: topics[index % topics.length]!,
        client,
        api: new GatewayApi(client, token),
        sentAt: 0,
        mode: null,
      };
    });
    this.#auth = `Bearer ${token}`;
  }

  /** Opens every receiver's connection with one immediate receive, `parallel` at a time. */
  async connect(parallel: number): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(parallel, this.receivers.length) }, async () => {
        while (next < this.receivers.length) {
          const r = this.receivers[next++]!;
          await this.#round(r, "immediate");
        }
      }),
    );
  }

  /** Starts every receiver's loop in the fleet's current mode. */
  start(): void {
    this.#loops = this.receivers.map((r) => this.#loop(r));
  }

  /** Ends the loops: every connection is closed, waiting receives included (a hang-up). */
  async stop(maxWaitMs = 15_000): Promise<void> {
    this.mode = "stop";
    for (const r of this.receivers) r.client.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.#loops),
      new Promise<void>((r) => (timer = setTimeout(r, maxWaitMs))),
    ]);
    clearTimeout(timer);
  }

  /** How many receivers' current (or last) receive was sent in `mode` after `since`. */
  sentSince(mode: Mode, since: number): number {
    let n = 0;
    for (const r of this.receivers) if (r.mode === mode && r.sentAt >= since) n++;
    return n;
  }

  /** The earliest send time of the receivers' current receives. */
  earliestSent(): number {
    let t = Infinity;
    for (const r of this.receivers) t = Math.min(t, r.sentAt);
    return t;
  }

  recorder(kind: number): Recorder {
    let r = this.latency.get(kind);
    if (!r) {
      r = new Recorder();
      this.latency.set(kind, r);
    }
    return r;
  }

  async #loop(r: Receiver): Promise<void> {
    for (let i = 0; i < MAX_ROUNDS && this.mode !== "stop"; i++) {
      await this.#round(r, this.mode);
    }
  }

  /** One receive (and the acknowledgement of what it got). */
  async #round(r: Receiver, mode: Mode): Promise<void> {
    if (mode === "stop") return;
    const wait = mode === "long" ? this.#waitSeconds : 0;
    r.mode = mode;
    r.sentAt = performance.now();
    let res;
    try {
      res = await r.client.request("POST", `/api/v3/topic/${r.topic}/consumer/${GROUP}`, {
        authorization: this.#auth,
        accept: "multipart/mixed",
        "vqs-max-messages": String(this.#maxMessages),
        ...(wait > 0 ? { "vqs-wait-seconds": String(wait) } : {}),
      });
    } catch (err) {
      if (this.mode === "stop") return; // its connection was closed by stop()
      this.#error(errorKind(err));
      await sleep(ERROR_PAUSE_MS);
      return;
    }
    const got = performance.now();
    this.counts.receives++;
    if (res.status === 204) {
      this.counts.empty++;
      if (wait > 0) {
        this.emptyLongPolls.record(got - r.sentAt);
        if (got - r.sentAt < wait * 1000 - 1000) this.counts.earlyEmpty++;
      }
      return;
    }
    if (res.status !== 200) {
      this.#error(`receive HTTP ${res.status}`);
      await sleep(ERROR_PAUSE_MS);
      return;
    }
    this.counts.withMessages++;
    let handles: string[];
    try {
      const parts = parseMultipart(res.contentType, res.body);
      for (const p of parts) {
        const seq = p.payload.readUInt32LE(8);
        this.received.set(seq, (this.received.get(seq) ?? 0) + 1);
        this.recorder(p.payload.readUInt8(12)).record(got - sentAt(p.payload));
      }
      handles = parts.map((p) => p.headers.get("vqs-receipt-handle") ?? "");
    } catch (err) {
      this.#error(errorKind(err));
      return;
    }
    for (const handle of handles) {
      try {
        const ack = await r.api.ack(r.topic, GROUP, handle);
        if (ack.status === 204) this.counts.acks++;
        else this.#error(`ack HTTP ${ack.status}`);
      } catch (err) {
        if (this.mode !== "stop") this.#error(errorKind(err));
      }
    }
  }

  #error(kind: string): void {
    this.counts.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }
}

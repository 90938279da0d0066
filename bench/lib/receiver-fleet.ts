// Many receivers, each on its own keep-alive connection to one gateway, each looping over
// ReceiveMessages with Vqs-Wait-Seconds (long polling). Messages carry a sequence number (see
// stampMessage), so the fleet counts how often each arrived. Used by bench/long-poll.ts.
import { GatewayApi } from "./gw.js";
import { createHttpClient, parseMultipart, type HttpClient } from "./http-client.js";
import { errorKind } from "./raw.js";
import { sleep } from "./stats.js";

/** Every receiver is on group GROUP of one of the topics. */
export const GROUP = "workers";
/** Bounds each receiver's loop (a long run at 10 receives/s does not come near it). */
const MAX_ROUNDS = 1_000_000;
/** A receive that fails is tried again after this pause (never in a tight loop). */
const ERROR_PAUSE_MS = 100;

interface Receiver {
  readonly topic: string;
  readonly client: HttpClient;
  readonly api: GatewayApi;
}

/** A message's 16 bytes, its sequence number first. */
export function stampMessage(seq: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(seq, 0);
  return b;
}

export class ReceiverFleet {
  readonly receivers: Receiver[];
  readonly counts = { receives: 0, acks: 0, errors: 0 };
  readonly errorKinds = new Map<string, number>();
  /** Receptions of each message by sequence number (more than 1: delivered twice). */
  readonly received = new Map<number, number>();
  readonly #waitSeconds: number;
  readonly #auth: string;
  #stopped = false;
  #loops: Promise<void>[] = [];

  constructor(url: string, token: string, topics: readonly string[], count: number, wait: number) {
    this.#waitSeconds = wait;
    // One client (one keep-alive agent) per receiver: its requests follow one another, so it
    // holds exactly one connection.
    this.receivers = Array.from({ length: count }, (_, i) => {
      const client = createHttpClient([url]);
      return { topic: topics[i % topics.length]!, client, api: new GatewayApi(client, token) };
    });
    this.#auth = `Bearer ${token}`;
  }

  /** Opens every receiver's connection with one immediate receive, `parallel` at a time. */
  async connect(parallel: number): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(parallel, this.receivers.length) }, async () => {
        while (next < this.receivers.length) await this.#round(this.receivers[next++]!, 0);
      }),
    );
  }

  /** Starts every receiver's long-poll loop. */
  start(): void {
    this.#loops = this.receivers.map(async (r) => {
      for (let i = 0; i < MAX_ROUNDS && !this.#stopped; i++)
        await this.#round(r, this.#waitSeconds);
    });
  }

  /** Ends the loops: every connection is closed, waiting receives included (a hang-up). */
  async stop(maxWaitMs = 15_000): Promise<void> {
    this.#stopped = true;
    for (const r of this.receivers) r.client.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.#loops),
      new Promise<void>((r) => (timer = setTimeout(r, maxWaitMs))),
    ]);
    clearTimeout(timer);
  }

  /** One receive (and the acknowledgement of what it got). */
  async #round(r: Receiver, wait: number): Promise<void> {
    let res;
    try {
      res = await r.client.request("POST", `/api/v3/topic/${r.topic}/consumer/${GROUP}`, {
        authorization: this.#auth,
        accept: "multipart/mixed",
        "vqs-max-messages": "1",
        ...(wait > 0 ? { "vqs-wait-seconds": String(wait) } : {}),
      });
    } catch (err) {
      if (this.#stopped) return; // its connection was closed by stop()
      this.#error(errorKind(err));
      await sleep(ERROR_PAUSE_MS);
      return;
    }
    this.counts.receives++;
    if (res.status === 204) return;
    if (res.status !== 200) {
      this.#error(`receive HTTP ${res.status}`);
      await sleep(ERROR_PAUSE_MS);
      return;
    }
    let handles: string[];
    try {
      const parts = parseMultipart(res.contentType, res.body);
      for (const p of parts) {
        const seq = p.payload.readUInt32LE(0);
        this.received.set(seq, (this.received.get(seq) ?? 0) + 1);
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
        if (!this.#stopped) this.#error(errorKind(err));
      }
    }
  }

  #error(kind: string): void {
    this.counts.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }
}

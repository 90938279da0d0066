// The flow-control workload: producers publish over `keys` keys (header `tenant`), each key's
// messages by one producer, in sequence (`<key>:<seq>` bodies, a non-201 retried with the same
// idempotency key until stored or given up), and polling consumers read two groups: one
// `ordered`, one with a per-key concurrency and rate. A few deliveries are never acknowledged (a
// consumer that died): their lease ends by expiry. The drain runs until each group acknowledged
// every stored publish (or the deadline).
import type { RecordingClient } from "./client.js";
import { eventually } from "../helpers/wait.js";

export const FLOW_KEY_HEADER = "tenant";
export const ORDERED_GROUP = "fc-ordered";
export const RATED_GROUP = "fc-rated";
export const FLOW_RATE = { limit: 4, periodSeconds: 1, burst: 2 } as const;
export const FLOW_CONCURRENCY = 2;
export const FLOW_LEASE_SECONDS = 3;

export const FLOW_SETTINGS: Record<string, unknown> = {
  [ORDERED_GROUP]: { flowControl: { key: FLOW_KEY_HEADER, ordered: true } },
  [RATED_GROUP]: {
    flowControl: { key: FLOW_KEY_HEADER, concurrency: FLOW_CONCURRENCY, rate: FLOW_RATE },
  },
};

export interface FlowWorkloadOptions {
  readonly gateways: number;
  readonly keys: number;
  readonly producers: number;
  /** Consumers per group. */
  readonly consumers: number;
  readonly publishIntervalMs: number;
  readonly skipAckFraction: number;
  readonly random: () => number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FlowWorkload {
  readonly #client: RecordingClient;
  readonly #o: FlowWorkloadOptions;
  #producing = false;
  #consuming = false;
  #producers: Promise<void>[] = [];
  #consumers: Promise<void>[] = [];
  readonly #stored = new Set<string>();
  readonly #acked = new Map<string, Set<string>>([
    [ORDERED_GROUP, new Set()],
    [RATED_GROUP, new Set()],
  ]);

  constructor(client: RecordingClient, o: FlowWorkloadOptions) {
    this.#client = client;
    this.#o = o;
  }

  start(): void {
    this.#producing = this.#consuming = true;
    for (let i = 0; i < this.#o.producers; i++) this.#producers.push(this.#produce(i));
    for (const group of [ORDERED_GROUP, RATED_GROUP]) {
      for (let i = 0; i < this.#o.consumers; i++) this.#consumers.push(this.#consume(group, i));
    }
  }

  get stored(): number {
    return this.#stored.size;
  }

  /** Stored publishes a group has not acknowledged yet. */
  missing(group: string): string[] {
    const acked = this.#acked.get(group)!;
    return [...this.#stored].filter((b) => !acked.has(b));
  }

  async stopProducers(): Promise<void> {
    this.#producing = false;
    await Promise.all(this.#producers);
  }

  async drain(deadlineMs: number): Promise<void> {
    await eventually(
      () => this.missing(ORDERED_GROUP).length === 0 && this.missing(RATED_GROUP).length === 0,
      deadlineMs,
      250,
    );
    this.#consuming = false;
    await Promise.all(this.#consumers);
  }

  async #produce(i: number): Promise<void> {
    const mine = [...Array(this.#o.keys).keys()].filter((k) => k % this.#o.producers === i);
    const seq = new Map<number, number>();
    for (let n = 0; this.#producing; n++) {
      const k = mine[n % mine.length]!;
      const s = (seq.get(k) ?? 0) + 1;
      seq.set(k, s);
      const body = `k${k}:${s}`;
      let gw = (i + n) % this.#o.gateways;
      // The next of a key is sent only once this one is stored (or given up): publish order.
      for (let attempt = 0; attempt < 20 && this.#producing; attempt++) {
        const res = await this.#client.publish(`p${i}`, gw, body, body, 0, undefined, {
          [FLOW_KEY_HEADER]: `k${k}`,
        });
        if (res.status === 201 || res.status === 202) {
          this.#stored.add(body);
          break;
        }
        gw = (gw + 1) % this.#o.gateways;
        await sleep(250);
      }
      await sleep(this.#o.publishIntervalMs);
    }
  }

  async #consume(group: string, i: number): Promise<void> {
    const r = this.#o.random;
    const acked = this.#acked.get(group)!;
    const proc = `${group}-c${i}`;
    let gw = i % this.#o.gateways;
    while (this.#consuming) {
      const res = await this.#client.receive(proc, gw, group, 10, FLOW_LEASE_SECONDS);
      for (const m of res.messages ?? []) {
        if (r() < this.#o.skipAckFraction) continue;
        // Some work: a lease held a moment, so leases of a key could overlap if unbounded.
        await sleep(Math.floor(r() * 30));
        const ack = await this.#client.ack(proc, gw, group, m.handle, m.id);
        if (ack.status === 204) acked.add(m.body);
      }
      if (res.status === 204) await sleep(50);
      else if (res.status !== 200) {
        gw = (gw + 1) % this.#o.gateways;
        await sleep(200);
      }
    }
  }
}

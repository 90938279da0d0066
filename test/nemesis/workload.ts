// The nemesis workload on one topic: producers publishing with idempotency keys (a non-201 is
// retried with the same key, through the other gateway), some plain and some delayed publishes,
// a few with large bodies (1.5-3 MB, through the large-body store);
// polling consumers of one group acknowledging what they receive (a few deliveries left to run out
// their lease, as a crashed consumer would); a readiness poller per gateway. After the faults:
// a drain that runs until every acknowledged publish was acknowledged by the group (or a
// deadline), and a fresh group that reads the whole topic once more (the audit).
import type { Complete } from "./check/history.js";
import type { RecordingClient } from "./client.js";
import { largePayload } from "./payload.js";
import { eventually } from "../helpers/wait.js";

export const GROUP = "workers";
export const AUDIT_GROUP = "audit";
export const PUSH_GROUP = "pushed";

export interface WorkloadOptions {
  readonly gateways: number;
  readonly producers: number;
  readonly consumers: number;
  /** Share of publishes that carry an idempotency key (the rest are plain, never retried). */
  readonly keyedFraction: number;
  readonly delayedFraction: number;
  readonly maxDelaySeconds: number;
  /** Share of publishes with a large body (above the inline limit: the large-body store). */
  readonly largeFraction: number;
  /** A large body's size: from `largeBytes` to twice that. */
  readonly largeBytes: number;
  /** Pause between one producer's publishes. */
  readonly publishIntervalMs: number;
  /** Retries of a keyed publish that was not answered 201 (same key). */
  readonly retries: number;
  /** Visibility timeout of the group's receives, seconds. */
  readonly lease: number;
  /** Share of deliveries the consumers never acknowledge. */
  readonly skipAckFraction: number;
  readonly random: () => number;
}

export const DEFAULT_WORKLOAD: Omit<WorkloadOptions, "gateways" | "random"> = {
  producers: 8,
  consumers: 2,
  keyedFraction: 0.9,
  delayedFraction: 0.1,
  maxDelaySeconds: 5,
  largeFraction: 0.01,
  largeBytes: 1_500_000,
  publishIntervalMs: 150,
  retries: 3,
  lease: 5,
  skipAckFraction: 0.02,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Workload {
  readonly #client: RecordingClient;
  readonly #o: WorkloadOptions;
  #producing = false;
  #consuming = false;
  #polling = false;
  #producers: Promise<void>[] = [];
  #consumers: Promise<void>[] = [];
  #pollers: Promise<void>[] = [];
  /** Bodies of publishes answered 201/202: what the group must acknowledge before the drain ends. */
  readonly #stored = new Set<string>();
  /** Bodies the group received, acknowledged (204), or last failed to acknowledge (when). */
  readonly #delivered = new Set<string>();
  readonly #acked = new Set<string>();
  readonly #ackFailedAt = new Map<string, number>();
  /** Bodies the audit group received. */
  readonly #audited = new Set<string>();
  readonly counts = { published: 0, acknowledged: 0 };

  constructor(client: RecordingClient, o: WorkloadOptions) {
    this.#client = client;
    this.#o = o;
  }

  start(): void {
    this.#producing = this.#consuming = this.#polling = true;
    for (let i = 0; i < this.#o.producers; i++) this.#producers.push(this.#produce(i));
    for (let i = 0; i < this.#o.consumers; i++) this.#consumers.push(this.#consume(i));
    for (let g = 0; g < this.#o.gateways; g++) this.#pollers.push(this.#poll(g));
  }

  async stopProducers(): Promise<void> {
    this.#producing = false;
    await Promise.all(this.#producers);
  }

  /** Bodies of stored publishes that are not in `seen` (the pushed group's drain asks). */
  notIn(seen: ReadonlySet<string>): string[] {
    return [...this.#stored].filter((b) => !seen.has(b));
  }

  /** A message published outside the workload (a nemesis probe) that the drain must wait for. */
  noteStored(body: string): void {
    this.#stored.add(body);
  }

  /**
   * Bodies acknowledged at publish that the group has not finished with: not received yet, or
   * received and neither acknowledged (204) nor past a lease and a margin since an acknowledgement
   * that failed (a failed acknowledgement may have taken effect: then nothing comes back).
   */
  missing(): string[] {
    const settled = Date.now() - this.#o.lease * 1000 - 10_000;
    return [...this.#stored].filter(
      (b) =>
        !this.#delivered.has(b) ||
        (!this.#acked.has(b) && (this.#ackFailedAt.get(b) ?? Infinity) > settled),
    );
  }

  /** Keeps consuming until the group is done with every stored publish or the deadline passes. */
  async drain(deadlineMs: number): Promise<void> {
    await eventually(() => this.missing().length === 0, deadlineMs, 250);
    this.#consuming = false;
    await Promise.all(this.#consumers);
  }

  async stop(): Promise<void> {
    this.#producing = this.#consuming = this.#polling = false;
    await Promise.all([...this.#producers, ...this.#consumers, ...this.#pollers]);
  }

  /** A fresh group reads the whole topic (every stored message once, acknowledged). */
  async audit(deadlineMs: number): Promise<void> {
    const end = Date.now() + deadlineMs;
    let empty = 0;
    let gw = 0;
    while (Date.now() < end) {
      const all = [...this.#stored].every((b) => this.#audited.has(b));
      if (all && empty >= 3) break;
      const r = await this.#client.receive("audit", gw, AUDIT_GROUP, 10, 300);
      if (r.status === 204) {
        empty++;
        await sleep(300);
        continue;
      }
      empty = 0;
      if (r.status !== 200) gw = (gw + 1) % this.#o.gateways;
      for (const m of r.messages ?? []) {
        this.#audited.add(m.body);
        await this.#client.ack("audit", gw, AUDIT_GROUP, m.handle, m.id);
      }
      if (r.status !== 200) await sleep(300);
    }
  }

  async #produce(i: number): Promise<void> {
    const r = this.#o.random;
    for (let n = 0; this.#producing; n++) {
      const keyed = r() < this.#o.keyedFraction;
      const delay =
        r() < this.#o.delayedFraction ? 1 + Math.floor(r() * this.#o.maxDelaySeconds) : 0;
      const large = r() < this.#o.largeFraction;
      const body = `${large ? "L" : ""}${keyed ? "k" : "u"}${i}-${n}`;
      // A few MB, the same bytes on every retry (derived from the label).
      const payload = large
        ? largePayload(body, this.#o.largeBytes + Math.floor(r() * this.#o.largeBytes))
        : undefined;
      let gw = i % this.#o.gateways;
      for (let attempt = 0; attempt <= (keyed ? this.#o.retries : 0); attempt++) {
        const res: Complete = await this.#client.publish(
          `p${i}`,
          gw,
          keyed ? body : null,
          body,
          delay,
          payload,
        );
        if (res.status === 201 || res.status === 202) {
          this.#stored.add(body);
          this.counts.published++;
          break;
        }
        gw = (gw + 1) % this.#o.gateways;
        await sleep(200);
      }
      await sleep(this.#o.publishIntervalMs);
    }
  }

  async #consume(i: number): Promise<void> {
    const r = this.#o.random;
    let gw = i % this.#o.gateways;
    while (this.#consuming) {
      const res = await this.#client.receive(`c${i}`, gw, GROUP, 10, this.#o.lease);
      for (const m of res.messages ?? []) {
        this.#delivered.add(m.body);
        this.#ackFailedAt.delete(m.body);
        if (r() < this.#o.skipAckFraction) continue;
        // Any gateway can acknowledge any handle: sometimes the other one does.
        const ackGw = r() < 0.25 ? (gw + 1) % this.#o.gateways : gw;
        const ack = await this.#client.ack(`c${i}`, ackGw, GROUP, m.handle, m.id);
        if (ack.status === 204) {
          this.#acked.add(m.body);
          this.counts.acknowledged++;
        } else this.#ackFailedAt.set(m.body, Date.now());
      }
      if (res.status === 204) await sleep(100);
      else if (res.status !== 200) {
        // A gateway that fails or hangs: try the other one next.
        gw = (gw + 1) % this.#o.gateways;
        await sleep(200);
      }
    }
  }

  async #poll(g: number): Promise<void> {
    while (this.#polling) {
      await this.#client.readyz(`r${g}`, g);
      await sleep(1000);
    }
  }
}

// Removes topics nobody needs any more, with their consumer groups; the next publish creates the
// topic again. Two kinds:
// - empty idle topics: every message has left the stream (aged out at its max age) and nobody
//   published to it for the idle time (a day by default);
// - settled short-lived topics: a topic under a pushed pattern (`prefix*` settings with push)
//   whose every group has acknowledged every message, with nothing delayed and nothing leased,
//   not published to for the settled time (minutes). Workflow DevKit 5.x makes one such topic
//   per run; waiting a day for them to age out would fill the namespace's topic cap.
// Every gateway sweeps now and then (with jitter); sweeps are idempotent, so several gateways
// doing it at once is harmless. Removal goes through topic-closing.ts, so a publish racing it is
// stored and delivered. A removed topic's large bodies go with it, but only those committed
// before the sweep listed the topic: a body without that may belong to an upload whose message
// is still to come (docs/architecture.md, "Hygiene and scale").
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { JetStreamApiCodes } from "@nats-io/jetstream";
import type { Logger } from "../../../logger.js";
import { decodeMessage, rfc3339ToMs } from "../../messages/message-codec.js";
import { isApiError } from "../../core/errors.js";
import { bodyPrefixOfTopicSubjects } from "../../core/naming.js";
import type { JetStreamBodies } from "../../bodies/jetstream-bodies.js";
import { leaderGet } from "../../messages/reads.js";
import { closeAndDelete, closedAt, CLOSE_STALE_MS, openSubjects, reopen } from "./topic-closing.js";

export interface TopicSweeperDeps {
  readonly jsm: JetStreamManager;
  readonly log: Logger;
  /** Server time (estimated). */
  readonly now: () => number;
  readonly idleMs: number;
  /** How long a settled topic under a pushed pattern is kept unused; 0: never removed early. */
  readonly settledMs?: number;
  /**
   * The consumers of the groups a pushed pattern gives the topic (namespace key, topic name), or
   * null when no pushed pattern applies to it: only such topics are removed once settled.
   */
  readonly pushedConsumers?: (namespaceKey: string, topic: string) => readonly string[] | null;
  /**
   * Removes the gateway's records of a stream's messages and groups (lease-records.ts), before
   * the stream is deleted: the topic made again starts at sequence 1, where an old record (an
   * acknowledgement by ID above all) would settle a new message unseen.
   */
  readonly forgetRecords?: (stream: string) => Promise<void>;
  /** The large-body store: a removed topic's committed bodies are removed from it. */
  readonly bodies?: Pick<JetStreamBodies, "position" | "removeCommitted">;
}

const TOPIC_STREAM = /^VQS_[0-9a-f]{32}$/;
/** Sweeps happen every half idle time, at most every 10 minutes, with ±50 % jitter. */
const MAX_INTERVAL_MS = 600_000;
/** Settled topics are looked for every half settled time, at most every minute, at least every second. */
const MAX_SETTLED_INTERVAL_MS = 60_000;
const MIN_INTERVAL_MS = 1000;
/** A topic with more delayed messages than this is not looked into (it is not short-lived). */
const MAX_PARKED = 64;
/** Topics removed at once. */
const REMOVERS = 8;

type Candidate = { readonly info: StreamInfo; readonly consumers: readonly string[] | null };

export class TopicSweeper {
  readonly #d: TopicSweeperDeps;
  #timer: NodeJS.Timeout | null = null;
  #sweeping: Promise<number> | null = null;

  constructor(deps: TopicSweeperDeps) {
    this.#d = deps;
  }

  /** The mean time between sweeps. */
  get intervalMs(): number {
    let base = Math.min(this.#d.idleMs / 2, MAX_INTERVAL_MS);
    const settled = this.#d.settledMs ?? 0;
    if (settled > 0) base = Math.min(base, settled / 2, MAX_SETTLED_INTERVAL_MS);
    return Math.max(base, MIN_INTERVAL_MS);
  }

  start(): void {
    const base = this.intervalMs;
    const next = () => {
      this.#timer = setTimeout(
        () => {
          this.sweep()
            .catch((err: unknown) => this.#d.log.warn({ err }, "topic sweep failed"))
            .finally(() => {
              if (this.#timer) next();
            });
        },
        base * (0.5 + Math.random()),
      );
      this.#timer.unref();
    };
    next();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#sweeping?.catch(() => undefined);
  }

  /** One pass over the region's topics; the number removed. */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#sweep().finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  async #sweep(): Promise<number> {
    // Before the listing: a body committed by then belongs to a message stored by then, so to
    // the stream listed (or an earlier one), never to a topic made again after a removal.
    const bodiesAt = await this.#bodiesPosition();
    const candidates: Candidate[] = [];
    for await (const info of this.#d.jsm.streams.list()) {
      if (!TOPIC_STREAM.test(info.config.name)) continue;
      const closed = closedAt(info.config);
      if (closed !== null) {
        await this.#reopenIfStale(info, closed);
        continue;
      }
      if (this.#isIdleEmptyTopic(info)) candidates.push({ info, consumers: null });
      else {
        const consumers = this.#settledCandidate(info);
        if (consumers) candidates.push({ info, consumers });
      }
    }
    let removed = 0;
    let settled = 0;
    const removeOne = async ({ info, consumers }: Candidate) => {
      try {
        if (consumers && !(await this.#isSettled(info, consumers))) return;
        // Once closed, no message can arrive; a group made meanwhile must have nothing either.
        const still = consumers ? () => this.#groupsSettled(info, consumers) : undefined;
        const forget = this.#d.forgetRecords;
        const beforeDelete = forget ? () => forget(info.config.name) : undefined;
        if (await closeAndDelete(this.#d.jsm, info, this.#d.now, still, beforeDelete)) {
          removed++;
          if (consumers) settled++;
          await this.#removeBodies(info, bodiesAt);
        }
      } catch (err) {
        if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) {
          this.#d.log.warn({ err, stream: info.config.name }, "could not remove a topic");
        }
      }
    };
    // A few at a time: thousands of short-lived topics are removed in seconds, not minutes.
    const queue = candidates.values();
    const worker = async () => {
      for (let next = queue.next(); !next.done; next = queue.next()) await removeOne(next.value);
    };
    await Promise.all(Array.from({ length: REMOVERS }, worker));
    if (removed > 0) this.#d.log.info({ removed, settled }, "removed unused topics");
    return removed;
  }

  async #bodiesPosition(): Promise<number> {
    if (!this.#d.bodies) return 0;
    try {
      return await this.#d.bodies.position();
    } catch (err) {
      this.#d.log.warn(
        { err },
        "could not read the large-body store; bodies stay until they expire",
      );
      return 0;
    }
  }

  /** The deleted topic's bodies committed by `position` (0: none looked for). */
  async #removeBodies(info: StreamInfo, position: number): Promise<void> {
    const prefix = bodyPrefixOfTopicSubjects(info.config.subjects?.[0] ?? "");
    if (!this.#d.bodies || position <= 0 || !prefix) return;
    try {
      await this.#d.bodies.removeCommitted(prefix, position);
    } catch (err) {
      // They expire with their TTL (the message's retention plus the margin).
      this.#d.log.warn({ err, stream: info.config.name }, "could not remove a topic's bodies");
    }
  }

  #isIdleEmptyTopic(info: StreamInfo): boolean {
    if (info.state.messages !== 0 || !isTopic(info)) return false;
    return this.#idleFor(info) >= this.#d.idleMs;
  }

  #idleFor(info: StreamInfo): number {
    const last = info.state.last_seq > 0 ? info.state.last_ts : info.created;
    return this.#d.now() - rfc3339ToMs(last);
  }

  /** The pushed groups' consumers of a topic that may be settled (cheap checks only), or null. */
  #settledCandidate(info: StreamInfo): readonly string[] | null {
    const settledMs = this.#d.settledMs ?? 0;
    if (settledMs <= 0 || !this.#d.pushedConsumers || !isTopic(info)) return null;
    if (this.#idleFor(info) < settledMs) return null;
    let d: { namespace?: unknown; topic?: unknown };
    try {
      d = JSON.parse(info.config.description ?? "") as typeof d;
    } catch {
      return null;
    }
    if (typeof d.namespace !== "string" || typeof d.topic !== "string") return null;
    const consumers = this.#d.pushedConsumers(d.namespace, d.topic);
    if (!consumers || info.state.consumer_count < consumers.length) return null;
    return consumers;
  }

  /**
   * Every group of the topic (each pushed group's among them) has acknowledged every message,
   * none is leased or waiting to be delivered again, and every delayed message has been moved.
   */
  async #isSettled(info: StreamInfo, pushed: readonly string[]): Promise<boolean> {
    return (await this.#groupsSettled(info, pushed)) && this.#nothingDelayed(info);
  }

  /** Every group has acknowledged every message it has seen, and each pushed group exists. */
  async #groupsSettled(info: StreamInfo, pushed: readonly string[]): Promise<boolean> {
    const seen = new Set<string>();
    for await (const c of this.#d.jsm.consumers.list(info.config.name)) {
      if (c.num_pending !== 0 || c.num_ack_pending !== 0) return false;
      seen.add(c.name);
    }
    return pushed.every((c) => seen.has(c));
  }

  /** Every parked (delayed) message of the topic has its ready copy, or has expired. */
  async #nothingDelayed(info: StreamInfo): Promise<boolean> {
    const base = (info.config.subjects?.[0] ?? "").slice(0, -2); // `vqs.<ns>.<id>`
    const { name } = info.config;
    const parked = await this.#d.jsm.streams.info(name, { subjects_filter: `${base}.d` });
    const count = parked.state.subjects?.[`${base}.d`] ?? 0;
    if (count === 0) return true;
    if (count > MAX_PARKED) return false;
    const moved = await this.#d.jsm.streams.info(name, { subjects_filter: `${base}.f.>` });
    const pointers = moved.state.subjects ?? {};
    let seq = 1;
    for (let i = 0; i < count; i++) {
      const m = await leaderGet(this.#d.jsm, name, { seq, next_by_subj: `${base}.d` }).catch(
        (err: unknown) => {
          if (isApiError(err, JetStreamApiCodes.NoMessageFound)) return null;
          throw err;
        },
      );
      if (!m) return true;
      if (!(`${base}.f.${m.seq.toString(36)}` in pointers)) {
        const message = decodeMessage(m.seq, rfc3339ToMs(m.timestamp), m.header, m.data);
        if (message && message.expiresAtMs > this.#d.now()) return false; // still to be moved
      }
      seq = m.seq + 1;
    }
    return true;
  }

  /** A close whose remover died: the topic's subjects are put back. */
  async #reopenIfStale(info: StreamInfo, closed: number): Promise<void> {
    if (this.#d.now() - closed < CLOSE_STALE_MS) return;
    const subjects = openSubjects(info.config);
    if (!subjects) return; // an earlier version's close: its next publisher puts them back
    try {
      await reopen(this.#d.jsm, info, subjects);
      this.#d.log.warn({ stream: info.config.name }, "reopened a topic a remover left closed");
    } catch (err) {
      this.#d.log.warn({ err, stream: info.config.name }, "could not reopen a closed topic");
    }
  }
}

function isTopic(info: StreamInfo): boolean {
  return info.config.description?.startsWith('{"vqs":1') === true;
}

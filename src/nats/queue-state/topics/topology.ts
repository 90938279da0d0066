// Creates streams and consumers on first use and remembers them, so the hot path makes no
// management calls: a topic's stream on its first publish, a group's consumer on its first receive.
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { StoreAdmission } from "../../../queue/admission/stored/store-admission.js";
import type { GroupStart } from "../../../queue/broker.js";
import { isApiError } from "../../core/errors.js";
import type { GroupNames, TopicNames } from "../../core/naming.js";
import { closedAt, CLOSE_STALE_MS, reopen } from "./topic-closing.js";

export interface TopologyOptions {
  readonly replicas: number;
  /** Longest a message may live (the largest TTL). */
  readonly maxAgeMs: number;
  /** Streams allow per-message TTL (the server has it and it is wanted). */
  readonly allowMsgTtl: boolean;
  /** Nats-Msg-Id window (at most maxAgeMs). */
  readonly dedupWindowMs: number;
  /** Largest NATS message (payload and headers). */
  readonly maxMsgBytes: number;
  /** A group's lease length when a receive asks for no other. */
  readonly ackWaitMs: number;
  /** Idle consumer groups are removed after this long. */
  readonly inactiveThresholdMs: number;
  /**
   * Hard byte limit of every topic stream (max_bytes with discard new; 0: none). JetStream
   * reserves it on creation, so the sum over all topics must fit the store (storage-quotas.ts).
   */
  readonly topicHardMaxBytes: number;
  /** Server time (estimated), to tell a close left behind (topic-closing.ts). */
  readonly now?: () => number;
  /**
   * Admission of a new topic's stream or group's consumer (the caps per namespace and per
   * tenant), asked before either is made.
   */
  readonly admission?: Pick<StoreAdmission, "admitTopic" | "admitGroup">;
}

/**
 * How long "this topic does not exist" is remembered, so polling an unused topic stays cheap. A
 * topic created through another gateway becomes receivable here at most this much later.
 */
const MISSING_TTL_MS = 500;
const MAX_MISSING = 10_000;

/** The lease (`ack_wait`) and cap (`max_ack_pending`) a push feed gives the consumer it makes. */
export interface PushedConsumer {
  readonly ackWaitMs: number;
  readonly maxAckPending: number;
}

export class Topology {
  readonly #jsm: JetStreamManager;
  readonly #opts: TopologyOptions;
  readonly #streams = new Map<string, Promise<void>>();
  readonly #consumers = new Map<string, Promise<boolean>>();
  /** Each consumer's `ack_wait` as last seen or set here (pushed groups have their own). */
  readonly #ackWaits = new Map<string, number>();
  /** The push lease and cap of each group this gateway pushes (its feed notes them). */
  readonly #pushed = new Map<string, PushedConsumer>();
  readonly #missing = new Map<string, number>();

  constructor(jsm: JetStreamManager, opts: TopologyOptions) {
    this.#jsm = jsm;
    this.#opts = opts;
  }

  /** Makes sure the topic's stream exists (creating it). */
  ensureStream(names: TopicNames): Promise<void> {
    this.#missing.delete(names.stream);
    return this.#once(this.#streams, names.stream, () => this.#createStream(names));
  }

  /** The `ack_wait` of consumers this gateway made and found nothing else on. */
  get defaultAckWaitMs(): number {
    return this.#opts.ackWaitMs;
  }

  /**
   * The lease a delivery of the group gets from JetStream with no `-NAK {delay}`: its consumer's
   * `ack_wait` as this gateway last saw or set it. Only the push feeds change it (every gateway
   * runs them for every pushed group, from the same settings), so it is current here but for
   * the moments a settings change takes to reach every gateway.
   */
  ackWaitMs(names: GroupNames): number {
    return this.#ackWaits.get(`${names.stream}/${names.consumer}`) ?? this.#opts.ackWaitMs;
  }

  noteAckWait(names: GroupNames, ms: number): void {
    this.#ackWaits.set(`${names.stream}/${names.consumer}`, ms);
  }

  /**
   * Makes sure the group's consumer exists; false when the topic itself does not exist. A push
   * feed creates it with its push lease and cap (`pushed`): on nats-server 2.9 a create of a
   * consumer that already exists is an update, so every gateway creating it at once must send
   * the same config, or the last one reverts the lease and cap another has already set. For the
   * same reason a receive that makes the consumer of a group this gateway pushes makes it with
   * the config its feed noted (`notePushed`). A push feed asks only when something changed
   * (settings, a topic created, its periodic look), so it does not take "does not exist" from
   * the cache kept for receives: a topic created through another gateway just after a feed found
   * it missing is fed at once, not at the next look. A consumer this call makes starts at
   * `start` (earliest: deliver all; latest: deliver new, after the stream's last message); one
   * that exists is never changed, and of two gateways making it at once the first one wins.
   */
  async ensureConsumer(
    names: GroupNames,
    pushed?: PushedConsumer,
    start: GroupStart = "earliest",
  ): Promise<boolean> {
    const key = `${names.stream}/${names.consumer}`;
    const missingUntil = pushed ? undefined : this.#missing.get(names.stream);
    if (missingUntil !== undefined && missingUntil > Date.now()) return false;
    const config = pushed ?? this.#pushed.get(key);
    const exists = await this.#once(this.#consumers, key, () =>
      this.#createConsumer(names, config, start),
    );
    if (!exists) {
      this.#consumers.delete(key);
      // Not for a stream this gateway made or is making: a look that raced the creation would
      // hold this gateway's waiting receives back for no reason.
      if (!this.#streams.has(names.stream)) {
        if (this.#missing.size >= MAX_MISSING) this.#missing.clear(); // bounded: names are user input
        this.#missing.set(names.stream, Date.now() + MISSING_TTL_MS);
      }
    } else {
      this.#missing.delete(names.stream);
    }
    return exists;
  }

  /**
   * Whether the topic's stream exists, without creating it. Asked before Direct Get, which on a
   * missing stream times out instead of failing (the JetStream API import always "responds").
   */
  async streamExists(names: TopicNames): Promise<boolean> {
    if (this.#streams.has(names.stream)) return true;
    try {
      const info = await this.#jsm.streams.info(names.stream);
      assertIdentity(names.stream, info.config.description, names.description);
      this.#streams.set(names.stream, Promise.resolve());
      return true;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
      throw err;
    }
  }

  /**
   * After a publish found no stream: waits while a remover is closing it (topic-closing.ts), then
   * makes sure it exists again, created anew if it was removed or reopened if it was not. A close
   * left behind by a remover that died is undone here.
   */
  async reopenStream(names: TopicNames): Promise<void> {
    this.forgetStream(names.stream);
    const now = this.#opts.now ?? Date.now;
    for (let waitMs = 10; ; waitMs = Math.min(2 * waitMs, 200)) {
      let info;
      try {
        info = await this.#jsm.streams.info(names.stream);
      } catch (err) {
        if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
        return this.ensureStream(names);
      }
      const closed = closedAt(info.config);
      if (closed === null) return this.ensureStream(names);
      if (now() - closed >= CLOSE_STALE_MS) {
        assertIdentity(names.stream, info.config.description, names.description);
        await reopen(this.#jsm, info, [names.all]);
        return this.ensureStream(names);
      }
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }

  /** Forgets a stream (and its consumers) that was found deleted, so the next use recreates it. */
  forgetStream(stream: string): void {
    this.#streams.delete(stream);
    for (const key of this.#consumers.keys()) {
      if (key.startsWith(`${stream}/`)) this.#consumers.delete(key);
    }
    for (const key of this.#ackWaits.keys()) {
      if (key.startsWith(`${stream}/`)) this.#ackWaits.delete(key);
    }
  }

  /** A push feed's lease and cap for its group, for whichever call here makes its consumer. */
  notePushed(names: GroupNames, pushed: PushedConsumer): void {
    this.#pushed.set(`${names.stream}/${names.consumer}`, pushed);
  }

  /** The feed that noted `pushed` stopped; a later feed's note is kept. */
  forgetPushed(names: GroupNames, pushed: PushedConsumer): void {
    const key = `${names.stream}/${names.consumer}`;
    if (this.#pushed.get(key) === pushed) this.#pushed.delete(key);
  }

  forgetConsumer(names: GroupNames): void {
    this.#consumers.delete(`${names.stream}/${names.consumer}`);
    this.#ackWaits.delete(`${names.stream}/${names.consumer}`);
  }

  /** Creates a stream for internal use (the schedule) if it is missing. */
  async ensureInternalStream(config: Partial<StreamConfig> & { name: string }): Promise<void> {
    return this.#once(this.#streams, config.name, async () => {
      try {
        await this.#jsm.streams.info(config.name);
      } catch (err) {
        if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
        await this.#jsm.streams.add({ num_replicas: this.#opts.replicas, ...config });
      }
    });
  }

  async #createStream(names: TopicNames): Promise<void> {
    try {
      const info = await this.#jsm.streams.info(names.stream);
      assertIdentity(names.stream, info.config.description, names.description);
      const update = { ...info.config };
      if (this.#opts.allowMsgTtl && !info.config.allow_msg_ttl) {
        // Made before the server (or this setting) supported it: switch it on (it cannot be
        // switched off again, so "off" later only stops sending Nats-TTL).
        update.allow_msg_ttl = true;
      }
      // Made before the hard limit, or under another one: the limit in force now applies, never
      // below what the stream holds (nats-server 2.9 would drop the oldest messages to fit).
      const hard = this.#opts.topicHardMaxBytes;
      const maxBytes = hard > 0 ? Math.max(hard, info.state.bytes) : -1;
      if (info.config.max_bytes !== maxBytes && !(hard > 0 && info.config.max_bytes === hard)) {
        update.max_bytes = maxBytes;
        if (hard > 0) update.discard = DiscardPolicy.New;
      }
      if (
        update.allow_msg_ttl !== info.config.allow_msg_ttl ||
        update.max_bytes !== info.config.max_bytes ||
        update.discard !== info.config.discard
      ) {
        await this.#jsm.streams.update(names.stream, update);
      }
      return;
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    }
    await this.#opts.admission?.admitTopic(names.namespaceKey);
    const maxAge = nanos(this.#opts.maxAgeMs);
    try {
      await this.#jsm.streams.add({
        name: names.stream,
        description: names.description,
        subjects: [names.all],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        // With a hard limit, a full topic refuses new messages (429 topic_full) and never drops
        // stored ones; without one, only age and TTL remove messages.
        ...(this.#opts.topicHardMaxBytes > 0
          ? { discard: DiscardPolicy.New, max_bytes: this.#opts.topicHardMaxBytes }
          : { discard: DiscardPolicy.Old }),
        max_age: maxAge,
        duplicate_window: nanos(Math.min(this.#opts.dedupWindowMs, this.#opts.maxAgeMs)),
        max_msg_size: this.#opts.maxMsgBytes,
        num_replicas: this.#opts.replicas,
        allow_direct: true,
        ...(this.#opts.allowMsgTtl ? { allow_msg_ttl: true } : {}),
      });
    } catch (err) {
      // Another gateway created it first: fine, as long as it is the same topic.
      const info = await this.#jsm.streams.info(names.stream).catch(() => {
        throw err;
      });
      assertIdentity(names.stream, info.config.description, names.description);
    }
  }

  async #createConsumer(
    names: GroupNames,
    pushed: PushedConsumer | undefined,
    start: GroupStart,
  ): Promise<boolean> {
    try {
      const info = await this.#jsm.consumers.info(names.stream, names.consumer);
      this.noteAckWait(names, ackWaitMsOf(info.config));
      return true;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
      if (!isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    }
    await this.#opts.admission?.admitGroup(names.namespaceKey);
    const ackWaitMs = pushed?.ackWaitMs ?? this.#opts.ackWaitMs;
    try {
      await this.#jsm.consumers.add(names.stream, {
        durable_name: names.consumer,
        description: names.consumerDescription,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: start === "latest" ? DeliverPolicy.New : DeliverPolicy.All,
        filter_subject: names.ready,
        ack_wait: nanos(ackWaitMs),
        max_deliver: -1,
        max_ack_pending: pushed?.maxAckPending ?? -1,
        inactive_threshold: nanos(this.#opts.inactiveThresholdMs),
      });
      this.noteAckWait(names, ackWaitMs);
      return true;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
      // A concurrent create by another gateway wins; the consumer is there either way.
      const info = await this.#jsm.consumers.info(names.stream, names.consumer).catch(() => {
        throw err;
      });
      this.noteAckWait(names, ackWaitMsOf(info.config));
      return true;
    }
  }

  #once<T>(cache: Map<string, Promise<T>>, key: string, create: () => Promise<T>): Promise<T> {
    let p = cache.get(key);
    if (!p) {
      p = create();
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    return p;
  }
}

/** A consumer's `ack_wait` in ms (JetStream's default, 30 s, when the config leaves it out). */
export function ackWaitMsOf(config: { readonly ack_wait?: number }): number {
  return config.ack_wait === undefined ? 30_000 : config.ack_wait / 1_000_000;
}

function assertIdentity(stream: string, actual: string | undefined, expected: string): void {
  if (actual !== expected) {
    throw new Error(`stream ${stream} belongs to another topic: ${actual ?? "(no description)"}`);
  }
}

// Every storage port (src/queue/broker.ts) in memory, on an injected clock: one gateway's view of
// one region, for fast tests of the delivery rules without a nats-server. It behaves as the
// JetStream implementation does where the domain can tell (test/contract/ runs one suite against
// both): a group's cursor hands out redeliveries before new messages, counts every delivery,
// takes an acknowledgement or a release by stream position whatever the delivery, and counts a
// released message as in flight until it comes back. Time moves only when the clock says so:
// after moving it, `pump()` hands what became due to open feeds. MemoryQueueAdmin
// (memory-queue-admin.ts) reads and steers the same state, as JetStreamAdmin does the streams.
import type {
  Broker,
  Delivery,
  DeliveryTaker,
  Feed,
  GroupProgress,
  GroupStart,
  LeaseRef,
  MessageLookup,
  NewMessage,
  PublishOutcome,
  PushOutcomes,
  StoredMessage,
  UploadQuota,
} from "../queue/broker.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";
import { MemoryCutLeases } from "./memory-cut-leases.js";
import { MemoryFlowSlots } from "./memory-flow-slots.js";
import { MemoryRecords } from "./memory-records.js";

/** The gateway's record TTL at the longest retention (7 days) plus two hours. */
const RECORD_TTL_MS = (7 * 24 + 2) * 3_600_000;

export interface MemoryBrokerOptions {
  /** The clock every time comparison uses (ms). */
  readonly now: () => number;
  /** The lease a delivery gets without `setLease` (the consumer's ack wait). */
  readonly defaultLeaseMs: number;
  /** How long publishes with one `dedupToken` share one copy (the stream's duplicate window). */
  readonly dedupWindowMs: number;
  /** How long the records twin keeps a record after its last write (default: 7 days and 2 h). */
  readonly recordTtlMs?: number;
}

export interface MemoryEntry {
  readonly seq: number;
  readonly message: StoredMessage;
}

export interface MemoryPending {
  deliverySeq: number;
  deliveryCount: number;
  /** When the message may be handed out again. */
  availableAtMs: number;
}

export interface MemoryGroup {
  readonly name: string;
  /** Positions at or below it are behind where the group starts (a seek moves it). */
  floorSeq: number;
  /** The highest stream position handed out. */
  deliveredSeq: number;
  deliveries: number;
  readonly pending: Map<number, MemoryPending>;
  /** Every position handed out at least once (a delayed message comes after later ones). */
  readonly seen: Set<number>;
  readonly feeds: Set<DeliveryTaker>;
}

export interface MemoryTopic {
  readonly address: TopicAddress;
  lastSeq: number;
  readonly log: Map<number, MemoryEntry>;
  readonly groups: Map<string, MemoryGroup>;
  /** Idempotency key -> the sequence of its message. */
  readonly keys: Map<string, number>;
  /** Dedup token -> the sequence of its copy and when the window for it ends. */
  readonly tokens: Map<string, { seq: number; untilMs: number }>;
}

const topicKey = (t: TopicAddress) => JSON.stringify([t.namespace.key, t.topic]);
/** How a group is keyed here (MemoryQueueAdmin finds it by the same key). */
export const groupKey = (g: GroupAddress) => JSON.stringify([g.namespace.key, g.topic, g.group]);

export class MemoryBroker implements Broker, PushOutcomes {
  readonly defaultLeaseMs: number;
  /** The records port's twin (the ledgers' records), forgotten with a topic or group. */
  readonly records: MemoryRecords;
  /** The cut-lease log's twin, forgotten with a topic or group. */
  readonly cuts = new MemoryCutLeases();
  /** Flow control's slot records' twin (FlowSlotLedger), forgotten with a topic or group. */
  readonly flowSlots: MemoryFlowSlots;
  readonly #o: MemoryBrokerOptions;
  readonly #topics = new Map<string, MemoryTopic>();
  readonly #epochs = new Map<string, number>();
  readonly #acked: ((group: GroupAddress, streamSeq: number) => void)[] = [];
  /** Push outcomes as noted, newest last (push health). */
  readonly pushOutcomes: { group: GroupAddress; outcome: string; atMs: number }[] = [];

  constructor(options: MemoryBrokerOptions) {
    this.#o = options;
    this.defaultLeaseMs = options.defaultLeaseMs;
    this.records = new MemoryRecords({
      now: options.now,
      ttlMs: options.recordTtlMs ?? RECORD_TTL_MS,
    });
    this.flowSlots = new MemoryFlowSlots(options.now);
  }

  /** Every group's lease without `setLease` is the default here (no pushed consumers). */
  leaseMsOf(_group: GroupAddress): number {
    return this.#o.defaultLeaseMs;
  }

  // ---- MessageLog

  /** No storage quotas in memory. */
  uploadQuota(): Promise<UploadQuota> {
    return Promise.resolve({ add: () => undefined, end: () => undefined });
  }

  publish(topic: TopicAddress, message: NewMessage): Promise<PublishOutcome> {
    const now = this.#o.now();
    const t = this.#topic(topic, true)!;
    if (message.dedupToken !== undefined) {
      const copy = t.tokens.get(message.dedupToken);
      if (copy && copy.untilMs > now) return Promise.resolve({ kind: "stored", seq: copy.seq });
    }
    if (message.idempotencyKey !== null) {
      const seq = t.keys.get(message.idempotencyKey);
      const original = seq === undefined ? undefined : t.log.get(seq);
      if (original && original.message.expiresAtMs > now) {
        return Promise.resolve({ kind: "duplicate", originalSeq: seq! });
      }
    }
    const seq = ++t.lastSeq;
    const stored: StoredMessage = {
      idSeq: seq,
      nonce: message.nonce,
      payload: message.payload,
      body: message.body ?? null,
      contentType: message.contentType,
      publishedAtMs: now,
      expiresAtMs: now + message.retentionSeconds * 1000,
      visibleAtMs: now + message.delaySeconds * 1000,
      trace: message.trace,
      headers: message.headers,
      deadLetter: message.deadLetter ?? null,
    };
    t.log.set(seq, { seq, message: stored });
    if (message.idempotencyKey !== null) t.keys.set(message.idempotencyKey, seq);
    if (message.dedupToken !== undefined) {
      t.tokens.set(message.dedupToken, { seq, untilMs: now + this.#o.dedupWindowMs });
    }
    this.pump();
    return Promise.resolve({ kind: "stored", seq });
  }

  lookup(topic: TopicAddress, idSeq: number): Promise<MessageLookup> {
    const entry = this.#live(this.#topic(topic), idSeq);
    if (!entry) return Promise.resolve({ kind: "missing" });
    if (entry.message.visibleAtMs > this.#o.now()) {
      return Promise.resolve({ kind: "delayed", message: entry.message });
    }
    return Promise.resolve({ kind: "ready", message: entry.message, streamSeq: entry.seq });
  }

  readTopic(
    topic: TopicAddress,
    fromSeq: number,
    max: number,
    maxBytes = Infinity,
  ): Promise<{ readonly streamSeq: number; readonly message: StoredMessage }[]> {
    const t = this.#topic(topic);
    if (!t) return Promise.resolve([]);
    const out: { streamSeq: number; message: StoredMessage }[] = [];
    let bytes = 0;
    for (const e of this.#visible(t)) {
      if (out.length >= max || bytes >= maxBytes) break;
      if (e.seq < fromSeq) continue;
      out.push({ streamSeq: e.seq, message: e.message });
      bytes += e.message.payload.byteLength;
    }
    return Promise.resolve(out);
  }

  removeMessage(topic: TopicAddress, streamSeq: number): Promise<void> {
    this.#topic(topic)?.log.delete(streamSeq);
    return Promise.resolve();
  }

  countMessages(topic: TopicAddress): Promise<number | null> {
    const t = this.#topic(topic);
    return Promise.resolve(t ? this.#visible(t).length : null);
  }

  isReady(): Promise<boolean> {
    return Promise.resolve(true);
  }

  // ---- GroupCursor

  pull(group: GroupAddress, max: number, start?: GroupStart): Promise<Delivery[] | null> {
    const t = this.#topic(group);
    if (!t) return Promise.resolve(null);
    return Promise.resolve(this.#deliver(t, this.#group(t, group, start), max));
  }

  setLease(group: GroupAddress, lease: LeaseRef, ms: number): Promise<void> {
    const p = this.#pendingOf(group, lease.streamSeq);
    if (p) p.availableAtMs = this.#o.now() + Math.max(0, ms);
    if (ms <= 0) this.pump();
    return Promise.resolve();
  }

  ack(group: GroupAddress, lease: LeaseRef): Promise<void> {
    this.#ack(group, lease);
    for (const listener of this.#acked) listener(group, lease.streamSeq);
    return Promise.resolve();
  }

  /** Not confirmed, so not told to `onAcked` listeners (as on JetStream). */
  ackUnconfirmed(group: GroupAddress, lease: LeaseRef): void {
    this.#ack(group, lease);
  }

  /**
   * Tells `listener` of every confirmed acknowledgement through this gateway (the push
   * scheduler frees a push's slot at it, as JetStreamBroker's `acked` option does).
   */
  onAcked(listener: (group: GroupAddress, streamSeq: number) => void): void {
    this.#acked.push(listener);
  }

  #ack(group: GroupAddress, lease: LeaseRef): void {
    const t = this.#topic(group);
    if (t) this.#group(t, group).pending.delete(lease.streamSeq);
  }

  progress(group: GroupAddress): Promise<GroupProgress | null> {
    const t = this.#topic(group);
    const g = t?.groups.get(groupKey(group));
    if (!t || !g) return Promise.resolve(null);
    return Promise.resolve({
      ackFloorSeq: this.ackFloor(g),
      deliveredSeq: g.deliveredSeq,
      inFlight: g.pending.size,
    });
  }

  openFeed(group: GroupAddress, taker: DeliveryTaker): Promise<Feed | null> {
    const t = this.#topic(group);
    if (!t) return Promise.resolve(null);
    const g = this.#group(t, group);
    g.feeds.add(taker);
    queueMicrotask(() => this.pump());
    return Promise.resolve({
      wake: () => this.pump(),
      close: () => void g.feeds.delete(taker),
    });
  }

  groupEpoch(group: GroupAddress): number {
    return this.#epochs.get(groupKey(group)) ?? 0;
  }

  /** Hands open feeds what they want of what is due now (call after moving the clock). */
  pump(): void {
    for (const t of this.#topics.values()) {
      for (const g of t.groups.values()) {
        for (const taker of g.feeds) {
          const want = taker.demand();
          if (want <= 0) continue;
          for (const d of this.#deliver(t, g, want)) taker.take(d);
        }
      }
    }
  }

  // ---- PushOutcomes

  notePushOutcome(group: GroupAddress, outcome: string, atMs: number): void {
    this.pushOutcomes.push({ group, outcome, atMs });
  }

  // ---- what MemoryQueueAdmin reads and steers

  /** Every topic held (of every namespace). */
  topics(): MemoryTopic[] {
    return [...this.#topics.values()];
  }

  topicState(topic: TopicAddress): MemoryTopic | undefined {
    return this.#topic(topic);
  }

  /** Live messages consumer groups see now, oldest first. */
  visible(t: MemoryTopic): MemoryEntry[] {
    return this.#visible(t);
  }

  /** The highest position below which the group acknowledged everything it was handed. */
  ackFloor(g: MemoryGroup): number {
    let floor = g.floorSeq;
    for (let seq = g.floorSeq + 1; seq <= g.deliveredSeq; seq++) {
      if (g.pending.has(seq)) break;
      floor = seq;
    }
    return floor;
  }

  /** The group's handles handed out so far turn stale. */
  advanceEpoch(group: GroupAddress): void {
    this.#epochs.set(groupKey(group), this.groupEpoch(group) + 1);
  }

  /** Removes the topic and every record of its groups. */
  dropTopic(topic: TopicAddress): void {
    this.#topics.delete(topicKey(topic));
    this.records.forgetTopic(topic);
    this.cuts.forgetTopic(topic);
    this.flowSlots.forgetTopic(topic);
    this.#forgetOutcomes((g) => topicKey(g) === topicKey(topic));
  }

  /** Removes the gateway's records of the group (leases, counts, push health). */
  forgetGroup(group: GroupAddress): void {
    const key = groupKey(group);
    this.records.forgetGroup(group);
    this.cuts.forgetGroup(group);
    this.flowSlots.forgetGroup(group);
    this.#forgetOutcomes((g) => groupKey(g) === key);
  }

  #forgetOutcomes(ofGroup: (g: GroupAddress) => boolean): void {
    const kept = this.pushOutcomes.filter((o) => !ofGroup(o.group));
    this.pushOutcomes.splice(0, this.pushOutcomes.length, ...kept);
  }

  // ---- inside

  #topic(topic: TopicAddress, create = false): MemoryTopic | undefined {
    const key = topicKey(topic);
    let t = this.#topics.get(key);
    if (!t && create) {
      t = {
        address: { namespace: topic.namespace, topic: topic.topic },
        lastSeq: 0,
        log: new Map(),
        groups: new Map(),
        keys: new Map(),
        tokens: new Map(),
      };
      this.#topics.set(key, t);
    }
    return t;
  }

  /**
   * The group, made at `start` if it does not exist. Latest: what is visible now counts as seen
   * (JetStream's deliver new starts after the stream's last message; a delayed message is
   * stored there again when it falls due, so it still comes).
   */
  #group(t: MemoryTopic, group: GroupAddress, start: GroupStart = "earliest"): MemoryGroup {
    const key = groupKey(group);
    let g = t.groups.get(key);
    if (!g) {
      g = {
        name: group.group,
        floorSeq: 0,
        deliveredSeq: 0,
        deliveries: 0,
        pending: new Map(),
        seen: new Set(),
        feeds: new Set(),
      };
      if (start === "latest") {
        for (const e of this.#visible(t)) g.seen.add(e.seq);
        g.deliveredSeq = t.lastSeq;
      }
      t.groups.set(key, g);
    }
    return g;
  }

  #pendingOf(group: GroupAddress, streamSeq: number): MemoryPending | undefined {
    return this.#topic(group)?.groups.get(groupKey(group))?.pending.get(streamSeq);
  }

  /** The entry at `seq` unless it was removed or has expired. */
  #live(t: MemoryTopic | undefined, seq: number): MemoryEntry | undefined {
    const entry = t?.log.get(seq);
    return entry && entry.message.expiresAtMs > this.#o.now() ? entry : undefined;
  }

  /** What consumer groups see now: live and no longer delayed, oldest first. */
  #visible(t: MemoryTopic): MemoryEntry[] {
    const now = this.#o.now();
    return [...t.log.values()]
      .filter((e) => e.message.expiresAtMs > now && e.message.visibleAtMs <= now)
      .sort((a, b) => a.seq - b.seq);
  }

  /** Up to `max` deliveries: due redeliveries first, then messages the group has not seen. */
  #deliver(t: MemoryTopic, g: MemoryGroup, max: number): Delivery[] {
    const now = this.#o.now();
    const out: Delivery[] = [];
    const hand = (entry: MemoryEntry, count: number) => {
      const p: MemoryPending = {
        deliverySeq: ++g.deliveries,
        deliveryCount: count,
        availableAtMs: now + this.#o.defaultLeaseMs,
      };
      g.pending.set(entry.seq, p);
      out.push({
        message: entry.message,
        streamSeq: entry.seq,
        deliverySeq: p.deliverySeq,
        deliveryCount: p.deliveryCount,
      });
    };
    const due = [...g.pending].filter(([, p]) => p.availableAtMs <= now).sort(([a], [b]) => a - b);
    for (const [seq, p] of due) {
      if (out.length >= max) return out;
      const entry = this.#live(t, seq);
      if (!entry) {
        g.pending.delete(seq); // removed or expired: nothing to hand out, nothing to ack
        continue;
      }
      hand(entry, p.deliveryCount + 1);
    }
    for (const entry of this.#visible(t)) {
      if (out.length >= max) break;
      if (entry.seq <= g.floorSeq || g.seen.has(entry.seq)) continue;
      g.seen.add(entry.seq);
      g.deliveredSeq = Math.max(g.deliveredSeq, entry.seq);
      hand(entry, 1);
    }
    return out;
  }
}

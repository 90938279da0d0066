// The storage ports: what the queue domain needs from a message store, in queue vocabulary
// (topic, group, lease): the message log and a group's cursor (the Broker), the cut-lease log,
// push outcomes.
// The records the ledgers keep are the records port's (records/record-store.ts). src/nats/
// implements them on JetStream; nothing else knows NATS exists.
import type { DeadLetterOrigin } from "../api/messages.js";
import type { BodyRef } from "./bodies.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";

/**
 * W3C trace context a publish carried (`traceparent`, `tracestate`, `baggage`), kept with the
 * message so a push can link the consumer's span to the producer's. Each is validated text.
 */
export interface TraceContext {
  readonly traceparent?: string;
  readonly tracestate?: string;
  readonly baggage?: string;
}

/**
 * The headers a message was published with that are its own (not the API's or the transport's:
 * docs/api.md, "Message headers"), names in lower case, values visible ASCII. Bounded at publish
 * (`LIMITS.messageHeaders`); empty for most messages.
 */
export type MessageHeaders = Readonly<Record<string, string>>;

/** A message without headers of its own (shared, never written to). */
export const NO_HEADERS: MessageHeaders = Object.freeze({});

/**
 * Where a dead-lettered message came from (the four `Vqs-Dead-Letter-*` fields), as the API
 * defines it (src/api/messages.ts).
 */
export type { DeadLetterOrigin };

export interface NewMessage {
  /** Empty when `body` is set. */
  readonly payload: Uint8Array;
  /** A body above the inline limit, already in the body store (written before the message). */
  readonly body?: BodyRef;
  readonly contentType: string | null;
  readonly retentionSeconds: number;
  /** Already capped at the retention. */
  readonly delaySeconds: number;
  /** While a message published with the same key lives, this one is dropped as a duplicate. */
  readonly idempotencyKey: string | null;
  readonly nonce: string;
  readonly trace: TraceContext | null;
  /** The message's own headers, kept with it and delivered with it. */
  readonly headers: MessageHeaders;
  /** Set on a dead-letter copy. */
  readonly deadLetter?: DeadLetterOrigin;
  /**
   * Makes the store keep one copy of publishes with the same token within its duplicate window
   * (a dead-letter copy, a redriven message, retried after a failure or raced by two gateways).
   */
  readonly dedupToken?: string;
}

export type PublishOutcome =
  | { readonly kind: "stored"; readonly seq: number }
  /** The key's message, which lives (a parked one has its timer). */
  | { readonly kind: "duplicate"; readonly originalSeq: number };

export interface StoredMessage {
  /** The sequence the message ID was made from (where it was first stored). */
  readonly idSeq: number;
  readonly nonce: string;
  readonly payload: Uint8Array;
  readonly contentType: string | null;
  /** Server time of the publish. */
  readonly publishedAtMs: number;
  readonly expiresAtMs: number;
  readonly visibleAtMs: number;
  readonly trace: TraceContext | null;
  /** The headers it was published with (its own: names in lower case). */
  readonly headers: MessageHeaders;
  readonly deadLetter: DeadLetterOrigin | null;
  /** Where the body is when it is not inline (`payload` is then empty). */
  readonly body: BodyRef | null;
}

/** A message handed to a group, before the gateway turns it into a receipt handle. */
export interface Delivery {
  readonly message: StoredMessage;
  /** Sequence of the deliverable copy in the topic log. */
  readonly streamSeq: number;
  readonly deliverySeq: number;
  readonly deliveryCount: number;
}

/**
 * Where a group that does not exist yet starts (the client's `Vqs-Cursor-Fallback`): at the
 * topic's oldest message, or after its last one (it gets only what becomes visible from then on:
 * what is published after, and delayed messages that fall due after).
 */
export type GroupStart = "earliest" | "latest";

/** The part of a lease the store needs to act on it. */
export interface LeaseRef {
  readonly streamSeq: number;
  readonly deliverySeq: number;
  readonly deliveryCount: number;
}

export type MessageLookup =
  | { readonly kind: "ready"; readonly message: StoredMessage; readonly streamSeq: number }
  | { readonly kind: "delayed"; readonly message: StoredMessage }
  | { readonly kind: "missing" };

/**
 * Regional failover: stores a message in a neighbour region while this region's store cannot,
 * never consumable there, to be relocated home when it recovers. Throws when no neighbour can.
 */
export interface Deferrer {
  defer(topic: TopicAddress, message: NewMessage): Promise<void>;
}

export interface GroupProgress {
  /** Every message at or below this sequence has been acknowledged by the group. */
  readonly ackFloorSeq: number;
  /** The highest sequence the group has been handed. */
  readonly deliveredSeq: number;
  /** Messages handed out and not yet acknowledged. */
  readonly inFlight: number;
}

/** Who takes what a group's feed brings (long polling). */
export interface DeliveryTaker {
  /** How many more deliveries it wants now. */
  demand(): number;
  /** A delivery, leased to this gateway for the consumer's default lease. */
  take(delivery: Delivery): void;
  /** The group or its topic went away. */
  gone(): void;
}

export interface Feed {
  /** Demand may have grown. */
  wake(): void;
  close(): void;
}

/** A large body's bytes against the storage quotas, as they arrive. */
export interface UploadQuota {
  /** Counts `n` more bytes; throws 429 `topic_full` / `storage_quota_exceeded`. */
  add(n: number): void;
  /** The upload ended; a stored body counts like a stored message. */
  end(stored: boolean): void;
}

/**
 * The topic log: messages as published, read back by ID or in order, removed. Shared by every
 * group of the topic.
 */
export interface MessageLog {
  publish(topic: TopicAddress, message: NewMessage): Promise<PublishOutcome>;
  /**
   * Counts a large body against the topic's and namespace's storage quotas while it is written:
   * 429 `topic_full` / `storage_quota_exceeded` at once when the declared length has no room,
   * and from `add` as soon as the bytes brought have none.
   */
  uploadQuota(topic: TopicAddress, declaredLength: number | null): Promise<UploadQuota>;
  /** Finds a message by the sequence of its ID. */
  lookup(topic: TopicAddress, idSeq: number): Promise<MessageLookup>;
  /**
   * Up to `max` messages consumer groups see (not delayed ones, not records), from stream
   * sequence `fromSeq` on, oldest first, read from the stream leader; empty when the topic does
   * not exist. With `maxBytes`, the read stops after the message whose payload brings the
   * payloads read to that many bytes or more (a peek page's reads hold a bounded share of memory).
   */
  readTopic(
    topic: TopicAddress,
    fromSeq: number,
    max: number,
    maxBytes?: number,
  ): Promise<{ readonly streamSeq: number; readonly message: StoredMessage }[]>;
  /** Removes one message from the topic, for every group (gone already: nothing happens). */
  removeMessage(topic: TopicAddress, streamSeq: number): Promise<void>;
  /** How many messages consumer groups can see in the topic; null when it does not exist. */
  countMessages(topic: TopicAddress): Promise<number | null>;
  /** True when the store answers. */
  isReady(): Promise<boolean>;
}

/**
 * A group's cursor over the log: what it is handed, under which lease, what it acknowledged.
 */
export interface GroupCursor {
  /**
   * The lease length a delivery of the group gets without `setLease` (its consumer's; a pushed
   * group's is its push lease).
   */
  leaseMsOf(group: GroupAddress): number;
  /**
   * Up to `max` deliveries at once; null when the topic does not exist. A group that does not
   * exist yet is made to start at `start` (default earliest); an existing one is never moved.
   */
  pull(group: GroupAddress, max: number, start?: GroupStart): Promise<Delivery[] | null>;
  /** Makes the lease end `ms` from now (0 releases the message at once). */
  setLease(group: GroupAddress, lease: LeaseRef, ms: number): Promise<void>;
  /** Removes the message from the group's view. Idempotent. */
  ack(group: GroupAddress, lease: LeaseRef): Promise<void>;
  /**
   * `ack` sent without waiting for the store's answer (for the pusher's `autoAck`, which answers
   * nobody): an ack that is lost on the way lets the message come back when its lease ends, a
   * redelivery that at-least-once allows. Throws only when it cannot be sent at all.
   */
  ackUnconfirmed(group: GroupAddress, lease: LeaseRef): void;
  /** null when the topic or group does not exist. */
  progress(group: GroupAddress): Promise<GroupProgress | null>;
  /**
   * Keeps a waiting pull open on the group (shared with everyone else feeding from it on this
   * gateway), sized to the takers' demand; null when the topic does not exist. A group it
   * makes starts at the oldest message (a waiting receive that found no topic: all of it came
   * after the receive did).
   */
  openFeed(group: GroupAddress, taker: DeliveryTaker): Promise<Feed | null>;
  /** The group's epoch (grows with every seek or deletion of the group), from memory. */
  groupEpoch(group: GroupAddress): number;
}

/**
 * Leases cut short through their own handle (released, or ended before the handle's deadline):
 * the message may be delivered again while the handle still looks current, so such a handle is
 * checked like one past its deadline. Every gateway knows every cut without a round trip.
 */
export interface CutLeaseLog {
  /** Records, for every gateway, that the lease was cut short before `untilMs`. */
  markCut(group: GroupAddress, lease: LeaseRef, untilMs: number): Promise<void>;
  /** Whether the lease was cut short through its handle (no round trip). */
  wasCut(group: GroupAddress, lease: LeaseRef): boolean;
}

/** Push health: how each push of a group ended (kept in memory, merged into the store now and then). */
export interface PushOutcomes {
  /** A push of the group ended with `outcome` ("success" or a failure): its push health. */
  notePushOutcome(group: GroupAddress, outcome: string, atMs: number): void;
}

/** One lease holding a slot of a flow-control key: which delivery, until when (server clock). */
export interface SlotHolder {
  readonly streamSeq: number;
  readonly deliveryCount: number;
  readonly untilMs: number;
}

/**
 * A flow-control key's pace, kept in the same record as its slots (one compare-and-set covers
 * both): its rate's theoretical arrival time (GCRA) and, for an ordered group, its order.
 */
export interface KeyPace {
  /** Rate: when the key's next hand-out is due without burst (server clock); null: none yet. */
  readonly tatMs: number | null;
  /** Ordered: the key's messages seen and not settled, by stream sequence; the first is the head. */
  readonly order: readonly number[];
  /** Ordered: the highest stream sequence of the key settled (acknowledged, dead-lettered, expired). */
  readonly doneSeq: number;
}

/** A flow-control key's record as stored: the leases holding a slot, its pace, its revision. */
export interface KeySlots extends KeyPace {
  readonly holders: readonly SlotHolder[];
  /** Store revision, for compare-and-set. */
  readonly revision: number;
}

/**
 * Per-key slot records of flow control (src/queue/flow-control/), one per group and key, shared
 * by every gateway of the region: read, then written by compare-and-set. `keyHash` is the key's
 * hash (hex), never the key itself. A record is forgotten by itself once no write has touched it
 * for longer than the longest lease (`FLOW_RECORD_TTL_MS`); which of its holders still hold is
 * the domain's to decide, by their `untilMs`. A port of its own, not the Broker's: `FlowSlotRecords`
 * on JetStream (KV VQS_FLOW_SLOTS), `MemoryFlowSlots` in memory.
 */
export interface FlowSlotLedger {
  getKeySlots(group: GroupAddress, keyHash: string): Promise<KeySlots | null>;
  /**
   * Compare-and-set (null: create); the new revision, or null when another writer won. `pace`
   * absent: none (no rate counted, no order).
   */
  putKeySlots(
    group: GroupAddress,
    keyHash: string,
    holders: readonly SlotHolder[],
    expectedRevision: number | null,
    pace?: KeyPace,
  ): Promise<number | null>;
  /**
   * Up to `max` of the group's key records, in no promised order (seeing a group's keys, the
   * management API): one bounded read, never a read per record. `more`: the group has others.
   */
  listKeySlots(group: GroupAddress, max: number): Promise<KeySlotsPage>;
}

/** One key's record as listed: its hash, holders (live or not: the domain decides) and pace. */
export interface KeySlotsEntry extends KeyPace {
  readonly keyHash: string;
  readonly holders: readonly SlotHolder[];
}

/** Some of a group's key records (FlowSlotLedger.listKeySlots). */
export interface KeySlotsPage {
  readonly records: readonly KeySlotsEntry[];
  /** The group has records not listed (more than `max`). */
  readonly more: boolean;
}

/** The message log and the group cursor: what src/nats implements on JetStream (JetStreamBroker). */
export interface Broker extends MessageLog, GroupCursor {}

// The management port: what seeing and steering queues needs from the store, in queue vocabulary
// (topics, groups, messages). src/nats/admin/ implements it on JetStream.
import type { StoredMessage } from "../broker.js";
import type { GroupAddress, Namespace, TopicAddress } from "../namespace.js";

export interface TopicFigures {
  readonly name: string;
  /** Messages consumer groups can see. */
  readonly messages: number;
  /** Delayed messages not yet visible. */
  readonly delayed: number;
  /** The topic's storage (its whole log: messages, key records, pointers). */
  readonly bytes: number;
  readonly oldestMessageAtMs: number | null;
  readonly newestMessageAtMs: number | null;
  readonly consumerGroups: number;
}

export interface GroupFigures {
  readonly name: string;
  readonly backlog: number;
  readonly inFlight: number;
  readonly deliveries: number;
  readonly redelivered: number;
  readonly acknowledgedThrough: number;
  readonly position: number;
  /** When the oldest message the group has not acknowledged was published; null: none. */
  readonly oldestUnacknowledgedAtMs: number | null;
}

export interface PushHealth {
  readonly lastSuccessAtMs: number | null;
  readonly lastFailureAtMs: number | null;
  readonly lastFailure: string | null;
}

export interface GroupPage {
  readonly after: string | null;
  readonly max: number;
}

export type SeekTarget = "earliest" | "latest" | { readonly timeMs: number };

export interface QueueAdmin {
  /** Every topic name of the namespace. */
  topicNames(ns: Namespace): Promise<string[]>;
  /** null: no such topic. */
  topic(topic: TopicAddress): Promise<TopicFigures | null>;
  /**
   * The topic's groups by name (code-point order); null: no such topic. With `page`, only those
   * named after `page.after`, at most `page.max` of them: their figures alone are read.
   */
  groups(topic: TopicAddress, page?: GroupPage): Promise<GroupFigures[] | null>;
  /** The first stream position at or after `timeMs` among the messages groups see. */
  positionAt(topic: TopicAddress, timeMs: number): Promise<number>;
  /** Removes the topic with its messages, groups and key records; false: there was none. */
  deleteTopic(topic: TopicAddress): Promise<boolean>;
  /** Removes every message (groups stay); how many visible or delayed ones; null: no topic. */
  purgeTopic(topic: TopicAddress): Promise<number | null>;
  /** Removes the group (position, leases); its handles turn stale; false: there was none. */
  deleteGroup(group: GroupAddress): Promise<boolean>;
  /** The group next receives from there; its handles turn stale; false: no such group. */
  seekGroup(group: GroupAddress, to: SeekTarget): Promise<boolean>;
  /** Namespaces with topics in this region, how many, and the bytes they hold. */
  namespaces(): Promise<
    ({ readonly namespace: Namespace; readonly topics: number } & NamespaceUsage)[]
  >;
  /** Bytes all of the namespace's topics hold (what its storage quota counts). */
  namespaceBytes(ns: Namespace): Promise<NamespaceUsage>;
  /** Messages of the group moved to its dead-letter topic (all gateways together). */
  deadLettered(group: GroupAddress): Promise<number>;
  pushHealth(group: GroupAddress): Promise<PushHealth | null>;
}

/** What a namespace holds: every byte its quota counts, and of them its large bodies. */
export interface NamespaceUsage {
  /** Its topics' streams and its large bodies (counted in whole chunks). */
  readonly bytes: number;
  /** Of `bytes`, its large bodies in the body store. */
  readonly largeBodyBytes: number;
}

export type { StoredMessage };

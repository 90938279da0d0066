// The one place where queue names become JetStream names. User text never reaches a subject or a
// stream name: a topic's stream is named by a SHA-256 of (region, namespace, topic), a group's
// consumer by a SHA-256 of the group name. A topic's subjects start with a hash of (region,
// namespace), so a namespace's topics can be listed by subject. All are hex, so
// case-insensitive file systems and NATS's name rules are safe. The full identity is kept in the stream/consumer description and
// checked on first use, which turns a (2^-128) hash collision into an error instead of a mix-up.
import { createHash } from "node:crypto";
import type { GroupAddress, TopicAddress } from "../../queue/namespace.js";

function hex(chars: number, ...parts: string[]): string {
  const h = createHash("sha256");
  for (const p of parts) h.update(p).update("\0");
  return h.digest("hex").slice(0, chars);
}

const hex128 = (...parts: string[]) => hex(32, ...parts);

export interface TopicNames {
  readonly stream: string;
  /** The namespace's canonical key (its quotas are looked up by it). */
  readonly namespaceKey: string;
  /** Subject filter of every topic of the namespace (to count them: caps per namespace). */
  readonly namespaceFilter: string;
  /** Subject filter of the whole topic log. */
  readonly all: string;
  /** Messages that consumer groups see. */
  readonly ready: string;
  /** Delayed messages parked until they are due. */
  readonly delayed: string;
  /** Prefix of forward pointers from a delayed message to its ready copy. */
  readonly forwardPrefix: string;
  /** Prefix of idempotency key records (`<prefix>.<key token>` -> the key's current message). */
  readonly keyPrefix: string;
  /** Stored as the stream description; identifies the topic on the NATS side. */
  readonly description: string;
}

/**
 * Names are asked for on every request; the hashes are remembered (bounded, since names are user
 * input).
 */
const cache = new Map<string, TopicNames | GroupNames>();
const CACHE_MAX = 50_000;

function remembered<T extends TopicNames>(key: string, make: () => T): T {
  let hit = cache.get(key) as T | undefined;
  if (!hit) {
    if (cache.size >= CACHE_MAX) cache.clear();
    hit = make();
    cache.set(key, hit);
  }
  return hit;
}

/** An injective cache key: each part prefixed by its length (cheaper than JSON.stringify). */
function keyOf(...parts: string[]): string {
  let key = "";
  for (const p of parts) key += `${p.length}:${p}`;
  return key;
}

/** Subject filter of every topic of a namespace (all its streams' subjects start with it). */
export function namespaceFilter(
  region: string,
  ns: Pick<TopicAddress["namespace"], "key">,
): string {
  return `vqs.${hex(16, region, ns.key)}.>`;
}

/**
 * A topic's names by region, namespace and topic: three lookups of the strings as they come (a
 * key made of them cost every publish a string to build and hash). Bounded like `cache`.
 */
const topicCache = new Map<string, Map<string, Map<string, TopicNames>>>();
let topicCached = 0;

export function topicNames(region: string, topic: TopicAddress): TopicNames {
  let byNs = topicCache.get(region);
  const byTopic = byNs?.get(topic.namespace.key);
  const hit = byTopic?.get(topic.topic);
  if (hit) return hit;
  if (topicCached >= CACHE_MAX) {
    topicCache.clear();
    topicCached = 0;
    byNs = undefined;
  }
  const names = makeTopicNames(region, topic);
  if (!byNs) topicCache.set(region, (byNs = new Map<string, Map<string, TopicNames>>()));
  let topics = byNs.get(topic.namespace.key);
  if (!topics) byNs.set(topic.namespace.key, (topics = new Map<string, TopicNames>()));
  topics.set(topic.topic, names);
  topicCached++;
  return names;
}

function makeTopicNames(region: string, topic: TopicAddress): TopicNames {
  const id = hex128(region, topic.namespace.key, topic.topic);
  const ns = hex(16, region, topic.namespace.key);
  const base = `vqs.${ns}.${id}`;
  return {
    stream: `VQS_${id}`,
    namespaceKey: topic.namespace.key,
    namespaceFilter: `vqs.${ns}.>`,
    all: `${base}.>`,
    ready: `${base}.m`,
    delayed: `${base}.d`,
    forwardPrefix: `${base}.f`,
    keyPrefix: `${base}.k`,
    description: JSON.stringify({
      vqs: 1,
      region,
      namespace: topic.namespace.key,
      topic: topic.topic,
    }),
  };
}

export interface GroupNames extends TopicNames {
  readonly consumer: string;
  readonly consumerDescription: string;
}

/**
 * Group names by the address object too: a push feed (and a receive, within its request) asks
 * for the same GroupAddress's names several times per message, and the string key is a copy of
 * the namespace key, topic and group, hashed on every lookup.
 */
const byAddress = new WeakMap<
  GroupAddress,
  { readonly region: string; readonly names: GroupNames }
>();

export function groupNames(region: string, group: GroupAddress): GroupNames {
  const known = byAddress.get(group);
  if (known?.region === region) return known.names; // names never change for an address
  const names = remembered(keyOf(region, group.namespace.key, group.topic, group.group), () =>
    makeGroupNames(region, group),
  );
  byAddress.set(group, { region, names });
  return names;
}

function makeGroupNames(region: string, group: GroupAddress): GroupNames {
  return {
    ...topicNames(region, group),
    consumer: `G_${hex128(group.group)}`,
    consumerDescription: JSON.stringify({ vqs: 1, group: group.group }),
  };
}

/**
 * The region's timers (moving delayed messages when due, deleting expired key records), sharded
 * by namespace: shard `i` is subject `vqs._timers.<i>`, read by durable consumer `timers-<i>`.
 */
export const TIMER_STREAM = "VQS_TIMERS";
export const TIMER_SHARDS = 16;
export const timerSubject = (shard: number) => `vqs._timers.${shard}`;
export const timerConsumer = (shard: number) => `timers-${shard}`;

/** The shard of a namespace's timers (a hash of its key: stable across gateways and restarts). */
export function timerShard(namespaceKey: string): number {
  return parseInt(hex(8, namespaceKey), 16) % TIMER_SHARDS;
}

/**
 * The single timer stream and consumer of earlier versions: no longer written, still drained, so
 * the timers stored before an upgrade fire.
 */
export const SCHEDULE_STREAM = "VQS_SCHEDULE";
export const SCHEDULE_SUBJECT = "vqs._schedule";
export const SCHEDULE_CONSUMER = "scheduler";

/**
 * The KV key of a settings document: hashes of (region, namespace), of the topic or `prefix*`
 * pattern, and of the group. A topic name cannot contain `*`, so a pattern and a topic never
 * share a key.
 */
export function settingsKey(
  region: string,
  namespaceKey: string,
  topicOrPattern: string,
  group: string,
): string {
  return `${hex128(region, namespaceKey)}.${hex128(topicOrPattern)}.${hex128(group)}`;
}

/** The region's store of large bodies (chunks), one stream for every namespace and topic. */
export const BODY_STREAM = "VQS_BODIES";
export const BODY_SUBJECTS = "vqs._body.>";

/**
 * Chunks of one topic's bodies are on `vqs._body.<ns64>.<hex128>.<body id>`: the namespace hash
 * and topic hash of the topic's own subjects, so a namespace's or a topic's bodies are one
 * subject filter (usage, purge, delete).
 */
export function bodyTopicPrefix(region: string, topic: TopicAddress): string {
  const names = topicNames(region, topic);
  return `vqs._body.${names.namespaceFilter.slice(4, -2)}.${names.stream.slice(4)}`;
}

/**
 * The body prefix of a topic by its stream's subject filter (`vqs.<ns64>.<hex128>.>`): what
 * `bodyTopicPrefix` gives for that topic, for code that knows the stream, not the topic's name.
 * Null for a subject filter that is not a topic's.
 */
export function bodyPrefixOfTopicSubjects(all: string): string | null {
  const m = /^vqs\.([0-9a-f]{16})\.([0-9a-f]{32})\.>$/.exec(all);
  return m ? `vqs._body.${m[1]}.${m[2]}` : null;
}

/** Subject filter of every body of a namespace. */
export function bodyNamespaceFilter(
  region: string,
  ns: Pick<TopicAddress["namespace"], "key">,
): string {
  return `vqs._body.${hex(16, region, ns.key)}.>`;
}

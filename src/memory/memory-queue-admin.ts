// The management port (src/queue/management/queue-admin.ts) in memory, over a MemoryBroker's own
// state, on an injected clock: what is published or pulled there is what it counts, purges and
// seeks. It answers as JetStreamAdmin does where the domain can tell (test/contract/ runs one
// suite against both); `bytes` counts payloads and content types, memory having no storage format.
import type {
  GroupFigures,
  GroupPage,
  PushHealth,
  NamespaceUsage,
  QueueAdmin,
  SeekTarget,
  TopicFigures,
} from "../queue/management/queue-admin.js";
import { LeaseLedger } from "../queue/ledgers/lease-ledger.js";
import type { GroupAddress, Namespace, TopicAddress } from "../queue/namespace.js";
import {
  groupKey,
  type MemoryBroker,
  type MemoryGroup,
  type MemoryTopic,
} from "./memory-broker.js";

export interface MemoryQueueAdminOptions {
  readonly broker: MemoryBroker;
  /** The clock delayed and expired messages are told by (the broker's). */
  readonly now: () => number;
}

export class MemoryQueueAdmin implements QueueAdmin {
  readonly #b: MemoryBroker;
  readonly #now: () => number;

  constructor(options: MemoryQueueAdminOptions) {
    this.#b = options.broker;
    this.#now = options.now;
  }

  topicNames(ns: Namespace): Promise<string[]> {
    return Promise.resolve(
      this.#of(ns)
        .map((t) => t.address.topic)
        .sort(),
    );
  }

  topic(topic: TopicAddress): Promise<TopicFigures | null> {
    const t = this.#b.topicState(topic);
    if (!t) return Promise.resolve(null);
    const now = this.#now();
    const visible = this.#b.visible(t);
    const delayed = [...t.log.values()].filter(
      (e) => e.message.expiresAtMs > now && e.message.visibleAtMs > now,
    ).length;
    return Promise.resolve({
      name: t.address.topic,
      messages: visible.length,
      delayed,
      bytes: bytesOf(t),
      oldestMessageAtMs: visible[0]?.message.publishedAtMs ?? null,
      newestMessageAtMs: visible.at(-1)?.message.publishedAtMs ?? null,
      consumerGroups: t.groups.size,
    });
  }

  groups(topic: TopicAddress, page?: GroupPage): Promise<GroupFigures[] | null> {
    const t = this.#b.topicState(topic);
    if (!t) return Promise.resolve(null);
    const after = page?.after ?? null;
    const groups = [...t.groups.values()]
      .filter((g) => after === null || g.name > after)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, page?.max ?? Infinity);
    return Promise.resolve(groups.map((g) => this.#figures(t, g)));
  }

  #figures(t: MemoryTopic, g: MemoryGroup): GroupFigures {
    const visible = this.#b.visible(t);
    const backlog = visible.filter((e) => e.seq > g.floorSeq && !g.seen.has(e.seq)).length;
    const floor = this.#b.ackFloor(g);
    const oldest =
      backlog > 0 || g.pending.size > 0 ? visible.find((e) => e.seq > floor) : undefined;
    return {
      name: g.name,
      backlog,
      inFlight: g.pending.size,
      deliveries: g.deliveries,
      redelivered: [...g.pending.values()].filter((p) => p.deliveryCount > 1).length,
      acknowledgedThrough: floor,
      position: g.deliveredSeq,
      oldestUnacknowledgedAtMs: oldest?.message.publishedAtMs ?? null,
    };
  }

  positionAt(topic: TopicAddress, timeMs: number): Promise<number> {
    const t = this.#b.topicState(topic);
    if (!t) return Promise.resolve(1);
    const first = this.#b.visible(t).find((e) => e.message.publishedAtMs >= timeMs);
    return Promise.resolve(first?.seq ?? t.lastSeq + 1);
  }

  deleteTopic(topic: TopicAddress): Promise<boolean> {
    const t = this.#b.topicState(topic);
    if (!t) return Promise.resolve(false);
    // Its groups' handles turn stale first, as on JetStream (a topic made again starts at 1).
    for (const g of t.groups.values()) this.#b.advanceEpoch({ ...t.address, group: g.name });
    this.#b.dropTopic(topic);
    return Promise.resolve(true);
  }

  async purgeTopic(topic: TopicAddress): Promise<number | null> {
    const figures = await this.topic(topic);
    const t = this.#b.topicState(topic);
    if (!figures || !t) return null;
    t.log.clear();
    for (const g of t.groups.values()) g.pending.clear();
    this.#b.flowSlots.forgetTopic(topic);
    return figures.messages + figures.delayed;
  }

  deleteGroup(group: GroupAddress): Promise<boolean> {
    const t = this.#b.topicState(group);
    if (!t?.groups.has(groupKey(group))) return Promise.resolve(false);
    this.#b.advanceEpoch(group);
    t.groups.delete(groupKey(group));
    this.#b.forgetGroup(group);
    return Promise.resolve(true);
  }

  async seekGroup(group: GroupAddress, to: SeekTarget): Promise<boolean> {
    const t = this.#b.topicState(group);
    const g = t?.groups.get(groupKey(group));
    if (!t || !g) return false;
    this.#b.advanceEpoch(group);
    // As JetStream makes the consumer again: nothing in flight, no deliveries counted.
    const from =
      to === "earliest"
        ? 1
        : to === "latest"
          ? t.lastSeq + 1
          : await this.positionAt(t.address, to.timeMs);
    g.floorSeq = from - 1;
    g.deliveredSeq = from - 1;
    g.deliveries = 0;
    g.pending.clear();
    g.seen.clear();
    this.#b.forgetGroup(group);
    return true;
  }

  // Bodies live with their messages here (no body store): none counts as a large body apart.
  namespaces(): Promise<
    { namespace: Namespace; topics: number; bytes: number; largeBodyBytes: number }[]
  > {
    const counts = new Map<
      string,
      { namespace: Namespace; topics: number; bytes: number; largeBodyBytes: number }
    >();
    for (const t of this.#b.topics()) {
      const ns = t.address.namespace;
      const c = counts.get(ns.key) ?? { namespace: ns, topics: 0, bytes: 0, largeBodyBytes: 0 };
      c.topics++;
      c.bytes += bytesOf(t);
      counts.set(ns.key, c);
    }
    return Promise.resolve(
      [...counts.values()].sort((a, b) => a.namespace.key.localeCompare(b.namespace.key)),
    );
  }

  namespaceBytes(ns: Namespace): Promise<NamespaceUsage> {
    const bytes = this.#of(ns).reduce((n, t) => n + bytesOf(t), 0);
    return Promise.resolve({ bytes, largeBodyBytes: 0 });
  }

  deadLettered(group: GroupAddress): Promise<number> {
    return new LeaseLedger(this.#b.records).deadLettered(group);
  }

  pushHealth(group: GroupAddress): Promise<PushHealth | null> {
    const outcomes = this.#b.pushOutcomes.filter((o) => groupKey(o.group) === groupKey(group));
    if (outcomes.length === 0) return Promise.resolve(null);
    const successes = outcomes.filter((o) => o.outcome === "success");
    const failure = outcomes.filter((o) => o.outcome !== "success").at(-1);
    return Promise.resolve({
      lastSuccessAtMs: successes.at(-1)?.atMs ?? null,
      lastFailureAtMs: failure?.atMs ?? null,
      lastFailure: failure?.outcome ?? null,
    });
  }

  #of(ns: Namespace): MemoryTopic[] {
    return this.#b.topics().filter((t) => t.address.namespace.key === ns.key);
  }
}

function bytesOf(t: MemoryTopic): number {
  let bytes = 0;
  for (const e of t.log.values()) {
    bytes += e.message.payload.byteLength + (e.message.contentType?.length ?? 0);
  }
  return bytes;
}

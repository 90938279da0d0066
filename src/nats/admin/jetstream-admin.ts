// The management port on JetStream: topics are streams found by their namespace's subject prefix
// and named by their description; groups are their consumers. Figures come from STREAM.INFO and
// CONSUMER.INFO; deletes, purges and seeks are the JetStream calls, with the gateway's own records
// of the group (leases in VQS_LEASES, the group's epoch) brought along. docs/architecture.md,
// "Management API", has each call's data flow.
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { GroupAddress, Namespace, TopicAddress } from "../../queue/namespace.js";
import { makeNamespace } from "../../queue/namespace.js";
import type {
  GroupFigures,
  GroupPage,
  NamespaceUsage,
  PushHealth,
  QueueAdmin,
  SeekTarget,
  TopicFigures,
} from "../../queue/management/queue-admin.js";
import { isApiError } from "../core/errors.js";
import {
  bodyTopicPrefix,
  groupNames,
  namespaceFilter,
  topicNames,
  type GroupNames,
} from "../core/naming.js";
import { directGet, leaderGet } from "../messages/reads.js";
import { rfc3339ToMs } from "../messages/message-codec.js";
import type { GroupEpochs } from "../queue-state/topics/group-epochs.js";
import type { LeaseRecords } from "../queue-state/records/lease-records.js";
import type { FlowSlotRecords } from "../queue-state/records/flow-slots.js";
import type { JetStreamBodies } from "../bodies/jetstream-bodies.js";
import type { Topology } from "../queue-state/topics/topology.js";
import type { StorageQuotas } from "../queue-state/usage/storage-quotas.js";

export interface JetStreamAdminDeps {
  readonly jsm: JetStreamManager;
  readonly topology: Topology;
  readonly records: LeaseRecords;
  /** Flow control's slot records, forgotten with the lease records. */
  readonly flowSlots?: FlowSlotRecords;
  readonly epochs: GroupEpochs;
  readonly region: string;
  /**
   * A topic's large bodies go with its messages (purge, delete): those committed before the
   * purge or delete began, never an upload's still under way (its message comes after).
   */
  readonly bodies: Pick<JetStreamBodies, "position" | "removeCommitted">;
  /** Large-body bytes per namespace, as the storage quotas count them. */
  readonly largeBodies: Pick<StorageQuotas, "largeBodyBytes" | "largeBodyBytesOf">;
}

/** After a group's epoch moves, how long a seek waits for every gateway to learn of it. */
const EPOCH_PROPAGATION_MS = 250;

export class JetStreamAdmin implements QueueAdmin {
  readonly #d: JetStreamAdminDeps;

  constructor(deps: JetStreamAdminDeps) {
    this.#d = deps;
  }

  async topicNames(ns: Namespace): Promise<string[]> {
    const names: string[] = [];
    for await (const info of this.#d.jsm.streams.list(namespaceFilter(this.#d.region, ns))) {
      const id = identity(info.config.description);
      if (id && id.region === this.#d.region && id.namespace === ns.key) names.push(id.topic);
    }
    return names.sort();
  }

  async namespaceBytes(ns: Namespace): Promise<NamespaceUsage> {
    const [streams, largeBodyBytes] = await Promise.all([
      (async () => {
        let bytes = 0;
        for await (const info of this.#d.jsm.streams.list(namespaceFilter(this.#d.region, ns))) {
          const id = identity(info.config.description);
          if (id && id.region === this.#d.region && id.namespace === ns.key) {
            bytes += info.state.bytes;
          }
        }
        return bytes;
      })(),
      this.#d.largeBodies.largeBodyBytes(ns.key),
    ]);
    return { bytes: streams + largeBodyBytes, largeBodyBytes };
  }

  async topic(topic: TopicAddress): Promise<TopicFigures | null> {
    const names = topicNames(this.#d.region, topic);
    let info;
    try {
      // Per-subject counts of the topic's own subjects: `m` (visible) and `d` (parked).
      info = await this.#d.jsm.streams.info(names.stream, {
        subjects_filter: names.all.replace(/>$/, "*"),
      });
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return null;
      throw err;
    }
    const id = identity(info.config.description);
    if (!id || id.namespace !== topic.namespace.key || id.topic !== topic.topic) return null;
    const subjects = info.state.subjects ?? {};
    const messages = subjects[names.ready] ?? 0;
    const parked = subjects[names.delayed] ?? 0;
    // Parked copies stay after their move: only those without a forward pointer wait.
    const moved = parked > 0 ? await this.#movedCount(names.stream, names) : 0;
    const oldest =
      messages > 0
        ? await leaderGet(this.#d.jsm, names.stream, { seq: 1, next_by_subj: names.ready })
        : null;
    const newest =
      messages > 0
        ? await directGet(this.#d.jsm, names.stream, { last_by_subj: names.ready })
        : null;
    return {
      name: topic.topic,
      messages,
      delayed: Math.max(0, parked - moved),
      bytes: info.state.bytes,
      oldestMessageAtMs: oldest ? rfc3339ToMs(oldest.timestamp) : null,
      newestMessageAtMs: newest ? rfc3339ToMs(newest.timestamp) : null,
      consumerGroups: info.state.consumer_count,
    };
  }

  async #movedCount(stream: string, names: { forwardPrefix: string }): Promise<number> {
    const info = await this.#d.jsm.streams.info(stream, {
      subjects_filter: `${names.forwardPrefix}.*`,
    });
    return Object.values(info.state.subjects ?? {}).reduce((n, c) => n + c, 0);
  }

  async groups(topic: TopicAddress, page?: GroupPage): Promise<GroupFigures[] | null> {
    const names = topicNames(this.#d.region, topic);
    if (!(await this.#d.topology.streamExists(names))) return null;
    // CONSUMER.LIST (256 a call) gives every group's counts; only the page's groups are read on.
    const listed: { name: string; info: ConsumerInfo }[] = [];
    try {
      for await (const c of this.#d.jsm.consumers.list(names.stream)) {
        const group = groupOf(c.config.description);
        if (group !== null && (!page?.after || group > page.after)) {
          listed.push({ name: group, info: c });
        }
      }
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return null;
      throw err;
    }
    listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const out: GroupFigures[] = [];
    for (const { name, info: c } of listed.slice(0, page?.max ?? Infinity)) {
      const floor = c.ack_floor.stream_seq;
      const oldest =
        c.num_ack_pending > 0 || c.num_pending > 0
          ? await leaderGet(this.#d.jsm, names.stream, {
              seq: floor + 1,
              next_by_subj: names.ready,
            })
          : null;
      out.push({
        name,
        backlog: c.num_pending,
        inFlight: c.num_ack_pending,
        deliveries: c.delivered.consumer_seq,
        redelivered: c.num_redelivered,
        acknowledgedThrough: floor,
        position: c.delivered.stream_seq,
        oldestUnacknowledgedAtMs: oldest ? rfc3339ToMs(oldest.timestamp) : null,
      });
    }
    return out;
  }

  async positionAt(topic: TopicAddress, timeMs: number): Promise<number> {
    const names = topicNames(this.#d.region, topic);
    const info = await this.#d.jsm.streams.info(names.stream);
    // Server times grow with the sequence: find the first message at or after the time.
    let lo = info.state.first_seq;
    let hi = info.state.last_seq + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const m = await leaderGet(this.#d.jsm, names.stream, { seq: mid, next_by_subj: names.ready });
      if (!m) hi = mid;
      else if (rfc3339ToMs(m.timestamp) < timeMs) lo = m.seq + 1;
      else hi = mid;
    }
    return lo;
  }

  async deleteTopic(topic: TopicAddress): Promise<boolean> {
    const names = topicNames(this.#d.region, topic);
    if ((await this.topic(topic)) === null) return false;
    // Its groups' handles turn stale first: a topic made again under the name starts at sequence
    // 1 again, where an old handle's acknowledgement would otherwise settle a new message.
    const groups: GroupNames[] = [];
    try {
      for await (const c of this.#d.jsm.consumers.list(names.stream)) {
        const group = groupOf(c.config.description);
        if (group !== null) groups.push(groupNames(this.#d.region, { ...topic, group }));
      }
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
      throw err;
    }
    for (const g of groups) await this.#d.epochs.advance(g);
    const bodiesAt = await this.#d.bodies.position();
    try {
      await this.#d.jsm.streams.delete(names.stream);
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
      throw err;
    }
    this.#d.topology.forgetStream(names.stream);
    await this.#removeBodies(topic, bodiesAt);
    await this.#forgetRecords(`${names.stream}.>`);
    return true;
  }

  async purgeTopic(topic: TopicAddress): Promise<number | null> {
    const figures = await this.topic(topic);
    if (figures === null) return null;
    const stream = topicNames(this.#d.region, topic).stream;
    const bodiesAt = await this.#d.bodies.position();
    await this.#d.jsm.streams.purge(stream);
    await this.#refreshPending(stream);
    // The leases of purged messages hold their keys no more (flow control).
    await this.#d.flowSlots?.forget(this.#d.jsm, `${stream}.>`);
    // After the messages: no message is left pointing at a body that is gone.
    await this.#removeBodies(topic, bodiesAt);
    return figures.messages + figures.delayed;
  }

  /**
   * The topic's bodies committed by `position`, the body store's last sequence read before the
   * purge or delete: their messages were stored before it, so it removed them. An upload under
   * way (no commit marker yet) keeps its chunks: its message is stored after the purge or delete
   * began and survives it (docs/architecture.md, "Large bodies", Lifecycle).
   */
  async #removeBodies(topic: TopicAddress, position: number): Promise<void> {
    await this.#d.bodies.removeCommitted(bodyTopicPrefix(this.#d.region, topic), position);
  }

  /**
   * Reads every group of a purged stream once. nats-server 2.9 keeps a consumer's count of
   * pending messages from before a purge until something recounts it (CONSUMER.INFO does, and
   * CONSUMER.LIST reads each one's info): with the stale count, a `no_wait` pull on the emptied
   * stream is held instead of answered 404, and every receive on the group failed with 503.
   * Later servers recount on purge; the read costs one request per topic purge on any server.
   */
  async #refreshPending(stream: string): Promise<void> {
    try {
      for await (const c of this.#d.jsm.consumers.list(stream)) void c;
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    }
  }

  async deleteGroup(group: GroupAddress): Promise<boolean> {
    const names = groupNames(this.#d.region, group);
    if (!(await this.#consumerExists(names))) return false;
    await this.#d.epochs.advance(names);
    try {
      await this.#d.jsm.consumers.delete(names.stream, names.consumer);
    } catch (err) {
      if (!isGone(err)) throw err;
    }
    this.#d.topology.forgetConsumer(names);
    await this.#forgetRecords(`${names.stream}.${names.consumer}.>`);
    return true;
  }

  async seekGroup(group: GroupAddress, to: SeekTarget): Promise<boolean> {
    const names = groupNames(this.#d.region, group);
    let config: ConsumerConfig;
    try {
      config = (await this.#d.jsm.consumers.info(names.stream, names.consumer)).config;
    } catch (err) {
      if (isGone(err)) return false;
      throw err;
    }
    // Handles handed out so far turn stale first (every gateway learns the epoch in a moment),
    // then the consumer is made again at the new position, with everything else as it was.
    await this.#d.epochs.advance(names);
    await new Promise((r) => setTimeout(r, EPOCH_PROPAGATION_MS));
    const fresh: Partial<ConsumerConfig> = {
      ...config,
      ack_policy: AckPolicy.Explicit,
      ...(to === "earliest"
        ? { deliver_policy: DeliverPolicy.All }
        : to === "latest"
          ? { deliver_policy: DeliverPolicy.New }
          : {
              deliver_policy: DeliverPolicy.StartTime,
              opt_start_time: new Date(to.timeMs).toISOString(),
            }),
    };
    delete fresh.opt_start_seq;
    if (to === "earliest" || to === "latest") delete fresh.opt_start_time;
    // A receive through another gateway may make the consumer again (deliver all) in the moment
    // it is gone: then it is replaced once more.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#d.jsm.consumers.delete(names.stream, names.consumer);
      } catch (err) {
        if (!isGone(err)) throw err;
      }
      try {
        await this.#d.jsm.consumers.add(names.stream, fresh);
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
    this.#d.topology.forgetConsumer(names);
    await this.#forgetRecords(`${names.stream}.${names.consumer}.>`);
    return true;
  }

  async namespaces(): Promise<({ namespace: Namespace; topics: number } & NamespaceUsage)[]> {
    const counts = new Map<string, { topics: number; bytes: number }>();
    for await (const info of this.#d.jsm.streams.list()) {
      const id = identity(info.config.description);
      if (id && id.region === this.#d.region) {
        const c = counts.get(id.namespace) ?? { topics: 0, bytes: 0 };
        c.topics++;
        c.bytes += info.state.bytes;
        counts.set(id.namespace, c);
      }
    }
    // Large bodies are in the body store, not the topics' streams: one read for every namespace.
    const large = await this.#d.largeBodies.largeBodyBytesOf([...counts.keys()]);
    const out: ({ namespace: Namespace; topics: number } & NamespaceUsage)[] = [];
    for (const [key, { topics, bytes }] of counts) {
      const parts = JSON.parse(key) as [string, string, string, string | null];
      const largeBodyBytes = large.get(key) ?? 0;
      out.push({
        namespace: makeNamespace(...parts),
        topics,
        bytes: bytes + largeBodyBytes,
        largeBodyBytes,
      });
    }
    return out.sort((a, b) => a.namespace.key.localeCompare(b.namespace.key));
  }

  deadLettered(group: GroupAddress): Promise<number> {
    return this.#d.records.deadLettered(groupNames(this.#d.region, group));
  }

  pushHealth(group: GroupAddress): Promise<PushHealth | null> {
    return this.#d.records.pushHealth(groupNames(this.#d.region, group));
  }

  async #consumerExists(names: GroupNames): Promise<boolean> {
    try {
      await this.#d.jsm.consumers.info(names.stream, names.consumer);
      return true;
    } catch (err) {
      if (isGone(err)) return false;
      throw err;
    }
  }

  /** Removes the gateway's lease records under a key prefix (a topic's or a group's). */
  async #forgetRecords(keys: string): Promise<void> {
    await this.#d.records.forget(this.#d.jsm, keys);
    await this.#d.flowSlots?.forget(this.#d.jsm, keys);
  }
}

function isGone(err: unknown): boolean {
  return (
    isApiError(err, JetStreamApiCodes.ConsumerNotFound) ||
    isApiError(err, JetStreamApiCodes.StreamNotFound)
  );
}

function identity(
  description: string | undefined,
): { region: string; namespace: string; topic: string } | null {
  try {
    const d = JSON.parse(description ?? "") as {
      vqs?: number;
      region?: string;
      namespace?: string;
      topic?: string;
    };
    return d.vqs === 1 && d.region && d.namespace && d.topic
      ? { region: d.region, namespace: d.namespace, topic: d.topic }
      : null;
  } catch {
    return null;
  }
}

function groupOf(description: string | undefined): string | null {
  try {
    const d = JSON.parse(description ?? "") as { vqs?: number; group?: string };
    return d.vqs === 1 && typeof d.group === "string" ? d.group : null;
  } catch {
    return null;
  }
}

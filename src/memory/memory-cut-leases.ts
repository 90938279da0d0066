// The cut-lease log (CutLeaseLog, src/queue/broker.ts) in memory: one gateway's set of leases cut
// short through their handle, forgotten with their topic or group.
import type { CutLeaseLog, LeaseRef } from "../queue/broker.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";

const topicPrefix = (t: TopicAddress) => JSON.stringify([t.namespace.key, t.topic]) + "#";
const groupPrefix = (g: GroupAddress) => `${topicPrefix(g)}${JSON.stringify(g.group)}#`;
const key = (g: GroupAddress, lease: LeaseRef) =>
  `${groupPrefix(g)}${lease.streamSeq}@${lease.deliveryCount}`;

export class MemoryCutLeases implements CutLeaseLog {
  readonly #cuts = new Set<string>();

  markCut(group: GroupAddress, lease: LeaseRef): Promise<void> {
    this.#cuts.add(key(group, lease));
    return Promise.resolve();
  }

  wasCut(group: GroupAddress, lease: LeaseRef): boolean {
    return this.#cuts.has(key(group, lease));
  }

  forgetTopic(topic: TopicAddress): void {
    this.#forget(topicPrefix(topic));
  }

  forgetGroup(group: GroupAddress): void {
    this.#forget(groupPrefix(group));
  }

  #forget(prefix: string): void {
    for (const k of [...this.#cuts]) if (k.startsWith(prefix)) this.#cuts.delete(k);
  }
}

// The in-memory twin of flow control's per-key slot records (FlowSlotLedger): compare-and-set on
// a revision, and a record nobody wrote for FLOW_RECORD_TTL_MS forgotten, as the JetStream
// bucket's max age forgets it (src/nats/queue-state/records/flow-slots.ts). Held to the same contract
// (test/contract/flow-slots-contract.ts).
import type {
  FlowSlotLedger,
  KeyPace,
  KeySlots,
  KeySlotsEntry,
  KeySlotsPage,
  SlotHolder,
} from "../queue/broker.js";
import { FLOW_RECORD_TTL_MS } from "../queue/limits.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";

const NO_PACE: KeyPace = { tatMs: null, order: [], doneSeq: 0 };
const topicPrefix = (t: TopicAddress) => JSON.stringify([t.namespace.key, t.topic]) + "#";
const groupPrefix = (g: GroupAddress) => `${topicPrefix(g)}${JSON.stringify(g.group)}#`;
const slotKey = (g: GroupAddress, keyHash: string) => `${groupPrefix(g)}${keyHash}`;

interface Entry {
  readonly holders: readonly SlotHolder[];
  readonly pace: KeyPace;
  readonly revision: number;
  readonly writtenAtMs: number;
}

export class MemoryFlowSlots implements FlowSlotLedger {
  readonly #now: () => number;
  readonly #records = new Map<string, Entry>();
  #revision = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  getKeySlots(group: GroupAddress, keyHash: string): Promise<KeySlots | null> {
    const e = this.#live(slotKey(group, keyHash));
    return Promise.resolve(e ? { holders: e.holders, ...e.pace, revision: e.revision } : null);
  }

  putKeySlots(
    group: GroupAddress,
    keyHash: string,
    holders: readonly SlotHolder[],
    expectedRevision: number | null,
    pace: KeyPace = NO_PACE,
  ): Promise<number | null> {
    const k = slotKey(group, keyHash);
    const e = this.#live(k);
    if ((e?.revision ?? null) !== expectedRevision) return Promise.resolve(null);
    const revision = ++this.#revision;
    this.#records.set(k, {
      holders: holders.map((h) => ({ ...h })),
      pace: { tatMs: pace.tatMs, order: [...pace.order], doneSeq: pace.doneSeq },
      revision,
      writtenAtMs: this.#now(),
    });
    return Promise.resolve(revision);
  }

  listKeySlots(group: GroupAddress, max: number): Promise<KeySlotsPage> {
    const prefix = groupPrefix(group);
    const records: KeySlotsEntry[] = [];
    let more = false;
    for (const k of [...this.#records.keys()]) {
      if (!k.startsWith(prefix)) continue;
      const e = this.#live(k);
      if (!e) continue;
      if (records.length >= max) {
        more = true;
        break;
      }
      records.push({
        keyHash: k.slice(prefix.length),
        holders: e.holders.map((h) => ({ ...h })),
        tatMs: e.pace.tatMs,
        order: [...e.pace.order],
        doneSeq: e.pace.doneSeq,
      });
    }
    return Promise.resolve({ records, more });
  }

  /** Forgets the records of every group of the topic (removed, or its messages purged). */
  forgetTopic(topic: TopicAddress): void {
    this.#forget(topicPrefix(topic));
  }

  /** Forgets the group's records (the group was removed, or sought). */
  forgetGroup(group: GroupAddress): void {
    this.#forget(groupPrefix(group));
  }

  #forget(prefix: string): void {
    for (const k of [...this.#records.keys()]) if (k.startsWith(prefix)) this.#records.delete(k);
  }

  #live(k: string): Entry | null {
    const e = this.#records.get(k);
    if (!e) return null;
    if (this.#now() - e.writtenAtMs >= FLOW_RECORD_TTL_MS) {
      this.#records.delete(k);
      return null;
    }
    return e;
  }
}

// The in-memory twin of flow control's per-key slot records (FlowSlotLedger): compare-and-set on
// a revision, and a record nobody wrote for FLOW_RECORD_TTL_MS forgotten, as the JetStream
// bucket's max age forgets it (src/nats/queue-state/flow-slots.ts). Held to the same contract
// (test/contract/flow-slots-contract.ts).
import type { FlowSlotLedger, KeySlots, SlotHolder } from "../queue/broker.js";
import { FLOW_RECORD_TTL_MS } from "../queue/limits.js";
import type { GroupAddress } from "../queue/namespace.js";

interface Entry {
  readonly holders: readonly SlotHolder[];
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
    return Promise.resolve(e ? { holders: e.holders, revision: e.revision } : null);
  }

  putKeySlots(
    group: GroupAddress,
    keyHash: string,
    holders: readonly SlotHolder[],
    expectedRevision: number | null,
  ): Promise<number | null> {
    const k = slotKey(group, keyHash);
    const e = this.#live(k);
    if ((e?.revision ?? null) !== expectedRevision) return Promise.resolve(null);
    const revision = ++this.#revision;
    this.#records.set(k, {
      holders: holders.map((h) => ({ ...h })),
      revision,
      writtenAtMs: this.#now(),
    });
    return Promise.resolve(revision);
  }

  /** Forgets the records whose key `gone` names (a removed or sought group's, a topic's). */
  forgetWhere(gone: (key: string) => boolean): void {
    for (const k of [...this.#records.keys()]) if (gone(k)) this.#records.delete(k);
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

/** The memory broker's record key of the group (`groupKey#…`), so its forgetting covers these. */
const slotKey = (g: GroupAddress, keyHash: string) =>
  `${JSON.stringify([g.namespace.key, g.topic, g.group])}#f:${keyHash}`;

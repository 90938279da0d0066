// A flow-control key's slots: how many leases of one key may hold at once (`concurrency`), taken
// and given back by compare-and-set on the key's record (FlowSlotLedger), so every gateway of the
// region sees the same holders. A holder holds until its `untilMs` (the lease's deadline, on the
// gateways' common clock): a gateway that dies holding one frees it when the lease would have
// ended, and a record nobody writes is forgotten by the store. Expired holders are dropped at
// each write, so a record stays as small as the key's concurrency.
import type { FlowSlotLedger, SlotHolder } from "../broker.js";
import type { GroupAddress } from "../namespace.js";

/** Writers racing on one key's record: tries before a take counts as "no room" (tried later). */
const CAS_TRIES = 8;

export class KeySlots {
  readonly #ledger: FlowSlotLedger;
  readonly #now: () => number;

  constructor(ledger: FlowSlotLedger, now: () => number) {
    this.#ledger = ledger;
    this.#now = now;
  }

  /**
   * Takes one of the key's `limit` slots for `holder`; false when they are all held (by leases
   * still running). A holder of the same message is replaced (its redelivery).
   */
  async take(
    group: GroupAddress,
    keyHash: string,
    holder: SlotHolder,
    limit: number,
  ): Promise<boolean> {
    for (let i = 0; i < CAS_TRIES; i++) {
      const current = await this.#ledger.getKeySlots(group, keyHash);
      const now = this.#now();
      const live = (current?.holders ?? []).filter(
        (h) => h.untilMs > now && h.streamSeq !== holder.streamSeq,
      );
      if (live.length >= limit) return false;
      const written = await this.#ledger.putKeySlots(
        group,
        keyHash,
        [...live, holder],
        current?.revision ?? null,
      );
      if (written !== null) return true;
    }
    return false;
  }

  /**
   * The lease of message `streamSeq` now ends at `untilMs` (now or earlier: it gave its slot
   * back). Nothing happens when it holds no slot of the key (its lease had ended already).
   */
  async moveUntil(
    group: GroupAddress,
    keyHash: string,
    streamSeq: number,
    untilMs: number,
  ): Promise<void> {
    for (let i = 0; i < CAS_TRIES; i++) {
      const current = await this.#ledger.getKeySlots(group, keyHash);
      const now = this.#now();
      const holders = current?.holders ?? [];
      const mine = holders.find((h) => h.streamSeq === streamSeq && h.untilMs > now);
      if (!current || !mine) return;
      const others = holders.filter((h) => h.untilMs > now && h.streamSeq !== streamSeq);
      const next = untilMs > now ? [...others, { ...mine, untilMs }] : others;
      const written = await this.#ledger.putKeySlots(group, keyHash, next, current.revision);
      if (written !== null) return;
    }
    // Lost every race: the slot ends with its lease, as if the gateway had died.
  }

  /**
   * The lease of message `streamSeq` is extended to `untilMs`: its slot with it. A lease whose
   * slot ran out meanwhile (its deadline passed before the extension) takes one again, if the
   * key has room; false when it has none (another lease of the key holds it).
   */
  async extend(
    group: GroupAddress,
    keyHash: string,
    holder: SlotHolder,
    limit: number,
  ): Promise<boolean> {
    for (let i = 0; i < CAS_TRIES; i++) {
      const current = await this.#ledger.getKeySlots(group, keyHash);
      const now = this.#now();
      const live = (current?.holders ?? []).filter((h) => h.untilMs > now);
      const mine = live.find((h) => h.streamSeq === holder.streamSeq);
      const others = live.filter((h) => h !== mine);
      if (!mine && others.length >= limit) return false;
      const next = [...others, { ...(mine ?? holder), untilMs: holder.untilMs }];
      const written = await this.#ledger.putKeySlots(
        group,
        keyHash,
        next,
        current?.revision ?? null,
      );
      if (written !== null) return true;
    }
    return false;
  }

  /** Leases holding a slot of the key now (for tests and the management API). */
  async holders(group: GroupAddress, keyHash: string): Promise<SlotHolder[]> {
    const now = this.#now();
    const current = await this.#ledger.getKeySlots(group, keyHash);
    return (current?.holders ?? []).filter((h) => h.untilMs > now);
  }
}

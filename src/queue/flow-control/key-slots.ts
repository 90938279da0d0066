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
    const written = await this.#update(group, keyHash, (holders, now) => {
      const live = holders.filter((h) => h.untilMs > now && h.streamSeq !== holder.streamSeq);
      return live.length >= limit ? null : [...live, holder];
    });
    return written === true;
  }

  /**
   * The lease of message `streamSeq` now ends at `untilMs` (now or earlier: it gave its slot
   * back). Nothing happens when it holds no slot of the key (its lease had ended already). A
   * writer that loses every race leaves the slot to end with its lease, as if the gateway had
   * died.
   */
  async moveUntil(
    group: GroupAddress,
    keyHash: string,
    streamSeq: number,
    untilMs: number,
  ): Promise<void> {
    await this.#update(group, keyHash, (holders, now) => {
      const mine = holders.find((h) => h.streamSeq === streamSeq && h.untilMs > now);
      if (!mine) return null;
      const others = holders.filter((h) => h.untilMs > now && h.streamSeq !== streamSeq);
      return untilMs > now ? [...others, { ...mine, untilMs }] : others;
    });
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
    const written = await this.#update(group, keyHash, (holders, now) => {
      const live = holders.filter((h) => h.untilMs > now);
      const mine = live.find((h) => h.streamSeq === holder.streamSeq);
      const others = live.filter((h) => h !== mine);
      if (!mine && others.length >= limit) return null;
      return [...others, { ...(mine ?? holder), untilMs: holder.untilMs }];
    });
    return written === true;
  }

  /**
   * Reads the key's record, asks `next` for its new holders (null: leave it as it is), and writes
   * them by compare-and-set, reading again after a lost race, CAS_TRIES times. True once written,
   * false when `next` declined, null when every race was lost.
   */
  async #update(
    group: GroupAddress,
    keyHash: string,
    next: (holders: readonly SlotHolder[], now: number) => SlotHolder[] | null,
  ): Promise<boolean | null> {
    for (let i = 0; i < CAS_TRIES; i++) {
      const current = await this.#ledger.getKeySlots(group, keyHash);
      const holders = next(current?.holders ?? [], this.#now());
      if (holders === null) return false;
      const written = await this.#ledger.putKeySlots(
        group,
        keyHash,
        holders,
        current?.revision ?? null,
      );
      if (written !== null) return true;
    }
    return null;
  }

  /** Leases holding a slot of the key now (for tests and the management API). */
  async holders(group: GroupAddress, keyHash: string): Promise<SlotHolder[]> {
    const now = this.#now();
    const current = await this.#ledger.getKeySlots(group, keyHash);
    return (current?.holders ?? []).filter((h) => h.untilMs > now);
  }
}

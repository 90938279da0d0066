// A flow-control key's slots: how many leases of one key may hold at once (`concurrency`), taken
// and given back by compare-and-set on the key's record (FlowSlotLedger), so every gateway of the
// region sees the same holders. A holder holds until its `untilMs` (the lease's deadline, on the
// gateways' common clock): a gateway that dies holding one frees it when the lease would have
// ended, and a record nobody writes is forgotten by the store. Expired holders are dropped at
// each write, so a record stays as small as the key's concurrency. The same record keeps the
// key's pace (its rate's TAT, its order: key-rules.ts), so one write decides a take: the
// record as this gateway last saw it is the first guess, a read only after a lost race.
import type { FlowSlotLedger, KeyPace, SlotHolder } from "../broker.js";
import type { GroupAddress } from "../namespace.js";
import {
  decide,
  NO_PACE,
  settle,
  type KeyRules,
  type KeyState,
  type Verdict,
} from "./key-rules.js";

/** Writers racing on one key's record: tries before a take counts as "no room" (tried later). */
const CAS_TRIES = 8;

/** Key records a gateway remembers as it last read or wrote them (their revision with them). */
export const MAX_KNOWN = 16_384;

/** A key's record as last seen here; revision null: there was none. */
interface Known {
  readonly state: KeyState;
  readonly revision: number | null;
}

export class KeySlots {
  readonly #ledger: FlowSlotLedger;
  readonly #now: () => number;
  readonly #known = new Map<string, Known>();

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
    const rules = { concurrency: limit, rate: null, ordered: false };
    return (await this.admit(group, keyHash, holder, [], rules)).take;
  }

  /**
   * Takes a slot of the key for `holder` if its rules allow it now (key-rules.ts), writing what
   * they say even when it waits (the deliveries `seen` with it join an ordered key's order). A
   * writer that loses every race is told "slots" (tried later).
   */
  async admit(
    group: GroupAddress,
    keyHash: string,
    holder: SlotHolder,
    seen: readonly number[],
    rules: KeyRules,
    gapChecked = false,
  ): Promise<Verdict & { readonly read: KeyState }> {
    let verdict: (Verdict & { readonly read: KeyState }) | null = null;
    const written = await this.#update(group, keyHash, (state, now) => {
      const v = decide(state, holder, seen, rules, now, gapChecked);
      verdict = { ...v, read: state };
      return v.next;
    });
    const v = verdict as (Verdict & { readonly read: KeyState }) | null;
    if (v === null || written === null) {
      return { take: false, reason: "slots", next: null, read: v?.read ?? EMPTY };
    }
    return v;
  }

  /**
   * Message `streamSeq` settled (acknowledged, dead-lettered, expired): its slot frees and it
   * leaves its key's order, the next of the key becoming the head.
   */
  async settle(
    group: GroupAddress,
    keyHash: string,
    streamSeq: number,
    rules: KeyRules | null,
  ): Promise<void> {
    await this.#update(group, keyHash, (state, now) => {
      const holding = state.holders.some((h) => h.streamSeq === streamSeq && h.untilMs > now);
      const ordered = state.order.includes(streamSeq) || (rules?.ordered ?? false);
      return holding || ordered ? settle(state, streamSeq, rules, now) : null;
    });
  }

  /** The key's record as it is now (its holders still running). */
  async state(group: GroupAddress, keyHash: string): Promise<KeyState> {
    const now = this.#now();
    const current = await this.#ledger.getKeySlots(group, keyHash);
    if (!current) return EMPTY;
    return { ...paceOf(current), holders: current.holders.filter((h) => h.untilMs > now) };
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
    await this.#update(group, keyHash, (state, now) => {
      const { holders } = state;
      const mine = holders.find((h) => h.streamSeq === streamSeq && h.untilMs > now);
      if (!mine) return null;
      const others = holders.filter((h) => h.untilMs > now && h.streamSeq !== streamSeq);
      return { ...state, holders: untilMs > now ? [...others, { ...mine, untilMs }] : others };
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
    const written = await this.#update(group, keyHash, (state, now) => {
      const live = state.holders.filter((h) => h.untilMs > now);
      const mine = live.find((h) => h.streamSeq === holder.streamSeq);
      const others = live.filter((h) => h !== mine);
      if (!mine && others.length >= limit) return null;
      return { ...state, holders: [...others, { ...(mine ?? holder), untilMs: holder.untilMs }] };
    });
    return written === true;
  }

  /**
   * Asks `next` what the key's record becomes (null: leave it as it is) and writes that by
   * compare-and-set, CAS_TRIES times. The first try goes by the record as this gateway last
   * read or wrote it (or by no record, for a key it has not seen), with no read: a key taken
   * and settled here costs one write each. The compare-and-set keeps that exact: a record
   * another gateway changed (or the store forgot) fails the write, and the next try reads it.
   * A decline on a guess is decided again on a read. True once written, false when `next`
   * declined on the record as read, null when every race was lost.
   */
  async #update(
    group: GroupAddress,
    keyHash: string,
    next: (state: KeyState, now: number) => KeyState | null,
  ): Promise<boolean | null> {
    const k = knownKey(group, keyHash);
    let known: Known | null = this.#known.get(k) ?? UNSEEN;
    let guessed = true;
    let tries = 0;
    while (tries < CAS_TRIES) {
      if (known === null) {
        const current = await this.#ledger.getKeySlots(group, keyHash);
        known = current
          ? { state: { holders: current.holders, ...paceOf(current) }, revision: current.revision }
          : UNSEEN;
        guessed = false;
      }
      const after = next(known.state, this.#now());
      if (after === null) {
        if (!guessed) {
          this.#remember(k, known);
          return false;
        }
        known = null; // decided on a guess: decide again on a read (not a lost race)
        continue;
      }
      tries++;
      const written = await this.#ledger.putKeySlots(
        group,
        keyHash,
        after.holders,
        known.revision,
        paceOf(after),
      );
      if (written !== null) {
        this.#remember(k, { state: after, revision: written });
        return true;
      }
      this.#known.delete(k);
      known = null;
    }
    return null;
  }

  /** Keeps `known` as the key's record, the most recent last, at most MAX_KNOWN of them. */
  #remember(k: string, known: Known): void {
    this.#known.delete(k);
    this.#known.set(k, known);
    if (this.#known.size > MAX_KNOWN) {
      const oldest = this.#known.keys().next();
      if (!oldest.done) this.#known.delete(oldest.value);
    }
  }

  /** Leases holding a slot of the key now (for tests and the management API). */
  async holders(group: GroupAddress, keyHash: string): Promise<SlotHolder[]> {
    const now = this.#now();
    const current = await this.#ledger.getKeySlots(group, keyHash);
    return (current?.holders ?? []).filter((h) => h.untilMs > now);
  }
}

const EMPTY: KeyState = { holders: [], ...NO_PACE };
const UNSEEN: Known = { state: EMPTY, revision: null };
const knownKey = (g: GroupAddress, keyHash: string) =>
  `${g.namespace.key}\u0000${g.topic}\u0000${g.group}\u0000${keyHash}`;

function paceOf(s: KeyPace): KeyPace {
  return { tatMs: s.tatMs, order: s.order, doneSeq: s.doneSeq };
}

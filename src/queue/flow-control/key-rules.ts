// What one key's record allows for one delivery, decided on the record as read (pure: the
// compare-and-set around it is key-slots.ts). Concurrency: live holders under the limit. Rate:
// GCRA room (gcra.ts). Ordered: one in flight, and only the key's head (the lowest stream
// sequence of the key seen and not settled); every delivery of the key seen is written into the
// order, so a later one pulled before the head's redelivery waits behind it, on any gateway.
import type { KeyPace, SlotHolder } from "../broker.js";
import type { FlowControlSettings } from "../settings/consumer-settings.js";
import { gcraTake, type RateRule } from "./gcra.js";

/** Sequences one key's order keeps at most (the lowest); more are written when they come again. */
export const MAX_ORDER_LENGTH = 256;

export interface KeyRules {
  /** Leases of one key at once; null: no limit (`ordered` makes it 1). */
  readonly concurrency: number | null;
  readonly rate: RateRule | null;
  readonly ordered: boolean;
}

export interface KeyState extends KeyPace {
  readonly holders: readonly SlotHolder[];
}

/**
 * Why a delivery waits: its key's slots are held, its rate has no room, it is not the head; or
 * "gap": it would be its ordered key's head on first sight, and messages of the key published
 * between the last settled one and it may have been pulled by another gateway not written yet
 * (the caller looks in the log, then decides again with `gapChecked`).
 */
export type WaitReason = "slots" | "rate" | "order" | "gap";

export type Verdict =
  | { readonly take: true; readonly next: KeyState }
  /** `next`: what to write even so (the delivery and those seen with it join the order); null: nothing. */
  | { readonly take: false; readonly reason: WaitReason; readonly next: KeyState | null };

export const NO_PACE: KeyPace = { tatMs: null, order: [], doneSeq: 0 };

/** A group's limits per key, or null: it has none. */
export function keyRulesOf(flow: FlowControlSettings | null): KeyRules | null {
  if (flow === null) return null;
  const rate = flow.rate
    ? {
        intervalMs: (flow.rate.periodSeconds * 1000) / flow.rate.limit,
        burst: flow.rate.burst,
      }
    : null;
  if (flow.concurrency === null && rate === null && !flow.ordered) return null;
  return { concurrency: flow.concurrency, rate, ordered: flow.ordered };
}

/** The most leases of one key at once, or null: no limit. */
export function slotLimit(rules: KeyRules): number | null {
  return rules.ordered ? 1 : rules.concurrency;
}

/**
 * May `holder`'s delivery take a slot of its key now? `seen`: other deliveries of the key pulled
 * with it (an ordered key writes them into its order in the same write).
 */
export function decide(
  state: KeyState,
  holder: SlotHolder,
  seen: readonly number[],
  rules: KeyRules,
  nowMs: number,
  gapChecked = false,
): Verdict {
  const running = state.holders.filter((h) => h.untilMs > nowMs);
  const live = running.filter((h) => h.streamSeq !== holder.streamSeq);
  let order = state.order;
  if (rules.ordered) {
    order = withSeen(state, [holder.streamSeq, ...seen]);
    // Written while it waits: the holders as they are (only those ended dropped).
    const joined = order !== state.order ? { ...state, holders: running, order } : null;
    const firstSight = !state.order.includes(holder.streamSeq);
    if (!gapChecked && firstSight && order[0] === holder.streamSeq) {
      if (holder.streamSeq > state.doneSeq + 1) return { take: false, reason: "gap", next: null };
    }
    // Not the head: waits behind it. One settled already, or beyond the order's bound, is not
    // held back by it (its order was lost; it goes as a key of concurrency 1).
    if (order.length > 0 && order[0] !== holder.streamSeq && order.includes(holder.streamSeq)) {
      return { take: false, reason: "order", next: joined };
    }
    if (order.length >= MAX_ORDER_LENGTH && !order.includes(holder.streamSeq)) {
      return { take: false, reason: "order", next: joined };
    }
  }
  const limit = slotLimit(rules);
  const registered = order !== state.order ? { ...state, holders: running, order } : null;
  if (limit !== null && live.length >= limit) {
    return { take: false, reason: "slots", next: registered };
  }
  let tatMs = state.tatMs;
  if (rules.rate) {
    const r = gcraTake(state.tatMs, nowMs, rules.rate);
    if (!r.ok) return { take: false, reason: "rate", next: registered };
    tatMs = r.tatMs;
  }
  return { take: true, next: { ...state, holders: [...live, holder], tatMs, order } };
}

/** The key's state once message `streamSeq` settled (acknowledged, dead-lettered, expired). */
export function settle(state: KeyState, streamSeq: number, rules: KeyRules | null, nowMs: number) {
  const holders = state.holders.filter((h) => h.untilMs > nowMs && h.streamSeq !== streamSeq);
  const order = state.order.filter((s) => s !== streamSeq);
  const doneSeq = rules?.ordered ? Math.max(state.doneSeq, streamSeq) : state.doneSeq;
  return { ...state, holders, order, doneSeq };
}

/** The order with `seqs` in it (those not settled), lowest first, bounded; the same array if unchanged. */
function withSeen(state: KeyState, seqs: readonly number[]): readonly number[] {
  const add = seqs.filter((s) => s > state.doneSeq && !state.order.includes(s));
  if (add.length === 0) return state.order;
  const merged = [...state.order, ...add].sort((a, b) => a - b).slice(0, MAX_ORDER_LENGTH);
  return merged.length === state.order.length && merged.every((s, i) => s === state.order[i])
    ? state.order
    : merged;
}

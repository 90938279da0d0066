// Which pulled message is pushed next, on this gateway. Every pushed group's feed hands what it
// pulls to its GroupPushes (group-pushes.ts); the scheduler shares each namespace's cap of pushes
// in flight (maxPushesInFlightPerNamespace, held for its tenant too) among its groups:
// - below the cap, a group pulls at most its share of the free slots (rounded up); at it, each
//   group pulls one message ahead and holds it (its lease renewed while it waits);
// - a pulled message is pushed only while the namespace is under its cap, and a freed slot goes
//   to the oldest message held in the namespace (by the time it became visible), whichever group
//   it is of: the namespace's groups are served in publish order, as one queue would serve them,
//   and a freed slot is filled without waiting for a pull;
// - a push's slot frees at its endpoint's answer or at its message's acknowledgement through
//   this gateway, whichever is first.
// So a namespace whose endpoint never answers holds at most the cap of this gateway's pushes, and
// one held message per group (up to MAX_HELD_PER_GROUP for a group limited per key, whose held
// messages wait for their key's slot: group-pushes.ts). What a group's consumer allows at once
// across gateways (`max_ack_pending`, push-cap.ts) is the store's to enforce; see
// docs/architecture.md, "Push delivery" and "Flow control".
import type { Logger } from "../../logger.js";
import { NamespaceCounts } from "../admission/in-flight/namespace-counts.js";
import { tenantKeyOf } from "../admission/tenant.js";
import { MAX_HELD_BYTES } from "../flow-control/flow-gate.js";
import type { PushLedger } from "../ledgers/push-ledger.js";
import type { GroupAddress } from "../namespace.js";
import {
  GroupPushes,
  type GroupPushesDeps,
  type NamespaceSlots,
  type PushFlow,
} from "./group-pushes.js";
import type { PushFeedHooks } from "./push-feed.js";
import { pushedGroupKey as groupKey } from "./pushed-groups.js";
import type { PushedSettings } from "./pusher.js";

export interface PushSchedulerDeps {
  /** Pushes one delivery; resolves once it is settled or released (Pusher.push). */
  readonly push: GroupPushesDeps["push"];
  /** Holdbacks: releases of held messages never pushed, so that no delivery is counted for them. */
  readonly ledger: Pick<PushLedger, "holdBack">;
  /** Pushes in flight per namespace on this gateway, with its cap (0: none). */
  readonly pushesInFlight?: NamespaceCounts;
  /** Per-key slots (flow control), shared with the receive path (QueueContext.flow). */
  readonly flow?: PushFlow;
  readonly now: () => number;
  readonly log: Pick<Logger, "warn">;
}

export class PushScheduler implements NamespaceSlots {
  readonly #d: PushSchedulerDeps;
  readonly #counts: NamespaceCounts;
  /** Each namespace's pushed groups on this gateway. */
  readonly #groups = new Map<string, Set<GroupPushes>>();
  /** The same, by group (for acknowledgements). */
  readonly #byGroup = new Map<string, GroupPushes>();
  /** Payload bytes held for a full key, all groups (bounded as the receive path's waitlist). */
  #heldBytes = 0;

  constructor(deps: PushSchedulerDeps) {
    this.#d = deps;
    this.#counts = deps.pushesInFlight ?? new NamespaceCounts(0);
  }

  /** A pushed group's feed opens here: what it brings goes to the group's pushes. */
  join(group: GroupAddress, settings: PushedSettings, feed: PushFeedHooks): GroupPushes {
    const g = new GroupPushes(
      {
        group,
        slots: this,
        feed,
        push: this.#d.push,
        ledger: this.#d.ledger,
        flow: this.#d.flow ?? null,
        now: this.#d.now,
        log: this.#d.log,
      },
      settings,
    );
    const ns = g.namespaceKey;
    let set = this.#groups.get(ns);
    if (!set) this.#groups.set(ns, (set = new Set()));
    set.add(g);
    this.#byGroup.set(groupKey(group), g);
    return g;
  }

  leave(g: GroupPushes): void {
    const set = this.#groups.get(g.namespaceKey);
    set?.delete(g);
    if (set?.size === 0) this.#groups.delete(g.namespaceKey);
    const key = groupKey(g.group);
    if (this.#byGroup.get(key) === g) this.#byGroup.delete(key);
  }

  /**
   * A message of a pushed group was acknowledged through this gateway, the store confirming it:
   * a push of it frees its slots now (GroupPushes.settled).
   */
  settled(group: GroupAddress, streamSeq: number): void {
    this.#byGroup.get(groupKey(group))?.settled(streamSeq);
  }

  demand(ns: string, own: number, held: number): number {
    const cap = this.#counts.cap;
    if (cap === 0 || own <= 0) return own;
    const free = this.#counts.room(ns);
    // Not a group's last slot of its own: what it holds, another gateway with room cannot push.
    if (free <= 0) return held === 0 && own > 1 ? 1 : 0;
    return Math.min(own, Math.ceil(free / (this.#groups.get(ns)?.size ?? 1)));
  }

  dispatch(ns: string): void {
    const groups = this.#groups.get(ns);
    if (!groups) return;
    const cap = this.#counts.cap;
    while (cap === 0 || this.#counts.room(ns) > 0) {
      let oldest: GroupPushes | null = null;
      let oldestAt = Infinity;
      for (const g of groups) {
        const at = g.nextOrder();
        if (at !== null && at < oldestAt) [oldest, oldestAt] = [g, at];
      }
      if (!oldest) return;
      oldest.pushNext();
    }
  }

  started(ns: string): void {
    this.#counts.add(ns);
  }

  /** A push ended: the oldest held message takes the slot, and every group may pull again. */
  ended(ns: string): void {
    const wasFull = this.#counts.cap > 0 && this.#counts.room(ns) <= 0;
    this.#counts.release(ns);
    if (!wasFull) return this.dispatch(ns);
    // The slot may be the tenant's: each of its namespaces here may take it.
    const tenant = tenantKeyOf(ns);
    const siblings = [...this.#groups.keys()].filter((k) => k === ns || tenantKeyOf(k) === tenant);
    for (const k of siblings) this.dispatch(k);
    for (const k of siblings) for (const g of this.#groups.get(k) ?? []) g.wakeFeed();
  }

  /**
   * Messages held here because their key had no free slot, all pushed groups, and the keys they
   * are of (a metric: no label per key).
   */
  heldForKeys(): { readonly messages: number; readonly keys: number } {
    let messages = 0;
    let keys = 0;
    for (const g of this.#byGroup.values()) {
      const waiting = g.waitingKeys();
      messages += waiting.length;
      keys += new Set(waiting).size;
    }
    return { messages, keys };
  }

  holdBytes(bytes: number): boolean {
    if (this.#heldBytes + bytes > MAX_HELD_BYTES) return false;
    this.#heldBytes += bytes;
    return true;
  }

  unholdBytes(bytes: number): void {
    this.#heldBytes -= bytes;
  }
}

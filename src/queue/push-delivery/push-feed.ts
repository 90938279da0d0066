// The narrow port between a pushed group's feed (the adapter keeps a pull open on its consumer,
// src/nats/push-feeds/; the twin's is src/memory/memory-push-feeds.ts) and the push scheduler:
// the feed hands over what its pulls bring, and the scheduler decides what is pushed when.
import type { Delivery } from "../broker.js";

/** A delivery a pushed group's feed brought, leased to this gateway for the group's lease. */
export interface PulledPush {
  readonly delivery: Delivery;
  /** Its lease starts again (the same delivery, no count): it waits for a slot. */
  renew(): void;
  /**
   * Given back unpushed, visible again `delayMs` later (none: at once). The store counts a
   * delivery; see `PushLedger.holdBack`.
   */
  release(delayMs?: number): void;
}

/** What the scheduler asks of a pushed group's feed. */
export interface PushFeedHooks {
  /** Demand may have grown (a slot freed): pull for it. */
  wake(): void;
  /** The group's epoch now (a seek or a removal moves it; GroupCursor.groupEpoch). */
  epoch(): number;
}

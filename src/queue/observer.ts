// What the queue domain reports about itself (metrics implement it; tests may ignore it).
import type { GroupAddress } from "./namespace.js";

export interface QueueObserver {
  published(duplicate: boolean): void;
  /** A publish stored in a neighbour region (answered 202). */
  deferred(): void;
  delivered(deliveryCount: number): void;
  acknowledged(): void;
  /** A message of `group` moved to its dead-letter topic. */
  deadLettered(group: GroupAddress): void;
  /** Messages moved back from a dead-letter topic. */
  redriven(count: number): void;
}

export const NO_OBSERVER: QueueObserver = {
  published: () => undefined,
  deferred: () => undefined,
  delivered: () => undefined,
  acknowledged: () => undefined,
  deadLettered: () => undefined,
  redriven: () => undefined,
};

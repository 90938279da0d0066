// What the queue domain reports about itself (metrics implement it; tests may ignore it).

export interface QueueObserver {
  published(duplicate: boolean): void;
  /** A publish stored in a neighbour region (answered 202). */
  deferred(): void;
  delivered(deliveryCount: number): void;
  acknowledged(): void;
}

export const NO_OBSERVER: QueueObserver = {
  published: () => undefined,
  deferred: () => undefined,
  delivered: () => undefined,
  acknowledged: () => undefined,
};

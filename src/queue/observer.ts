// What the queue domain reports about itself (metrics implement it; tests may ignore it).

export interface QueueObserver {
  published(duplicate: boolean): void;
  delivered(deliveryCount: number): void;
  acknowledged(): void;
}

export const NO_OBSERVER: QueueObserver = {
  published: () => undefined,
  delivered: () => undefined,
  acknowledged: () => undefined,
};

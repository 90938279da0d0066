// The domain on the in-memory storage ports for fast tests: a clock the test moves, a
// MemoryBroker on it, and a QueueService over that broker (src/memory/, test/unit/queue/).
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import type { TopicAddress } from "../../src/queue/namespace.js";
import { QueueService, type QueueServiceDeps } from "../../src/queue/queue-service.js";
import { deriveSecretKeys } from "../../src/queue/secret-keys.js";

export interface MemoryQueue {
  readonly broker: MemoryBroker;
  readonly queue: QueueService;
  /** The time both see (ms); move it with `advance`. */
  readonly now: () => number;
  readonly advance: (ms: number) => void;
  /** Publishes `text` as a text/plain message kept an hour. */
  publish(topic: TopicAddress, text: string): ReturnType<QueueService["publish"]>;
}

export function memoryQueue(
  options: Pick<QueueServiceDeps, "settingsOf"> & { readonly secret?: string } = {},
): MemoryQueue {
  let clock = Date.parse("2026-01-05T10:00:00Z");
  const now = () => clock;
  const broker = new MemoryBroker({ now, defaultLeaseMs: 60_000, dedupWindowMs: 120_000 });
  const queue = new QueueService({
    broker,
    keys: deriveSecretKeys(options.secret ?? "memory-queue-secret-memory-queue-secret", "iad1"),
    now,
    ...(options.settingsOf ? { settingsOf: options.settingsOf } : {}),
  });
  return {
    broker,
    queue,
    now,
    advance: (ms) => void (clock += ms),
    publish: (topic, text) =>
      queue.publish(topic, {
        payload: new TextEncoder().encode(text),
        contentType: "text/plain",
        retentionSeconds: 3600,
        delaySeconds: 0,
        idempotencyKey: null,
        trace: null,
      }),
  };
}

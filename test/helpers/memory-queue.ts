// The domain on the in-memory storage ports for fast tests: a clock the test moves, a
// MemoryBroker on it, and a QueueService over that broker (src/memory/, test/unit/queue/), with
// the publish, receive and error helpers the rule files share.
import { beforeEach } from "vitest";
import { isAppError } from "../../src/errors.js";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import type { MessageHeaders } from "../../src/queue/broker.js";
import { makeNamespace, type GroupAddress, type TopicAddress } from "../../src/queue/namespace.js";
import { QueueService } from "../../src/queue/queue-service.js";
import type { ReceiveOptions } from "../../src/queue/use-cases/receive.js";
import { deriveSecretKeys } from "../../src/queue/identity/secret-keys.js";
import {
  createQueueContext,
  type QueueContext,
  type QueueContextDeps,
} from "../../src/queue/use-cases/queue-context.js";

/** The namespace of the rule files. */
export const RULES_NAMESPACE = makeNamespace("team", "project", "production", null);

/** The consumer group `group` of the topic "orders" in RULES_NAMESPACE. */
export const rulesGroup = (group: string): GroupAddress => ({
  namespace: RULES_NAMESPACE,
  topic: "orders",
  group,
});

export type MemoryQueueOptions = Pick<QueueContextDeps, "settingsOf"> & {
  readonly secret?: string;
};

export interface MemoryQueue {
  readonly broker: MemoryBroker;
  readonly queue: QueueService;
  /** What the queue's use cases share (the pusher takes its parts from it, as in the gateway). */
  readonly context: QueueContext;
  /** The time both see (ms); move it with `advance`. */
  readonly now: () => number;
  readonly advance: (ms: number) => void;
  /** Publishes `text` as a text/plain message kept an hour. */
  publish(topic: TopicAddress, text: string): ReturnType<QueueService["publish"]>;
  /**
   * Publishes `text` as text/plain (kept an hour, no delay, no headers unless `more` says) and
   * returns its ID.
   */
  publishId(
    topic: TopicAddress,
    text: string,
    more?: {
      readonly delaySeconds?: number;
      readonly retentionSeconds?: number;
      readonly headers?: MessageHeaders;
    },
  ): Promise<string>;
  /** Receives with one message at most, a lease of 30 s and no concurrency limit, unless `more` says. */
  receive(group: GroupAddress, more?: Partial<ReceiveOptions>): ReturnType<QueueService["receive"]>;
  /** A second gateway: its own context (waitlists, remembered keys) over the same store and clock. */
  anotherGateway(): QueueService;
  /** That second gateway's context alone. */
  anotherContext(): QueueContext;
}

export function memoryQueue(options: MemoryQueueOptions = {}): MemoryQueue {
  let clock = Date.parse("2026-01-05T10:00:00Z");
  const now = () => clock;
  const broker = new MemoryBroker({ now, defaultLeaseMs: 60_000, dedupWindowMs: 120_000 });
  const newContext = () =>
    createQueueContext({
      broker,
      records: broker.records,
      cuts: broker.cuts,
      flowSlots: broker.flowSlots,
      idLeaseMarkWaitMs: 0,
      keys: deriveSecretKeys(options.secret ?? "memory-queue-secret-memory-queue-secret", "iad1"),
      now,
      ...(options.settingsOf ? { settingsOf: options.settingsOf } : {}),
    });
  const context = newContext();
  const queue = new QueueService({ context });
  const publish = (
    topic: TopicAddress,
    text: string,
    {
      delaySeconds = 0,
      retentionSeconds = 3600,
      headers = {},
    }: { delaySeconds?: number; retentionSeconds?: number; headers?: MessageHeaders } = {},
  ) =>
    queue.publish(topic, {
      payload: new TextEncoder().encode(text),
      contentType: "text/plain",
      retentionSeconds,
      delaySeconds,
      idempotencyKey: null,
      trace: null,
      headers,
    });
  return {
    broker,
    queue,
    context,
    now,
    advance: (ms) => void (clock += ms),
    publish: (topic, text) => publish(topic, text),
    publishId: async (topic, text, more) => {
      const published = await publish(topic, text, more);
      if (published.deferred) throw new Error("not deferred in memory");
      return published.messageId;
    },
    receive: (group, more = {}) =>
      queue.receive(group, {
        maxMessages: 1,
        visibilityTimeoutSeconds: 30,
        maxConcurrency: null,
        ...more,
      }),
    anotherGateway: () => new QueueService({ context: newContext() }),
    anotherContext: newContext,
  };
}

/**
 * A fresh memoryQueue before each test of the file. The object returned is the same throughout:
 * read its fields inside tests (beforeEach replaces them).
 */
export function useMemoryQueue(options: MemoryQueueOptions = {}): MemoryQueue {
  const current = {} as MemoryQueue;
  beforeEach(() => {
    Object.assign(current, memoryQueue(options));
  });
  return current;
}

/** The error code a promise fails with, or "(no error)". */
export async function errorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isAppError(err)) return err.code;
    throw err;
  }
  return "(no error)";
}

// The Deferrer port (src/queue/broker.ts) in memory, on an injected clock: a neighbour region
// that holds deferred publishes until `relocate()` brings them home into a MessageLog (a
// MemoryBroker), as the JetStream failover's relocator does. test/contract/ runs one suite
// against both.
import { AppError } from "../errors.js";
import type { Deferrer, MessageLog, NewMessage } from "../queue/broker.js";
import type { TopicAddress } from "../queue/namespace.js";

interface Deferred {
  readonly topic: TopicAddress;
  readonly message: NewMessage;
  /** When it was deferred: its retention and delay keep counting from then. */
  readonly sentMs: number;
}

export interface MemoryDeferrerOptions {
  /** The home region's log, where relocated messages go. */
  readonly home: MessageLog;
  readonly now: () => number;
}

export class MemoryDeferrer implements Deferrer {
  readonly #o: MemoryDeferrerOptions;
  #waiting: Deferred[] = [];
  #reachable = true;

  constructor(o: MemoryDeferrerOptions) {
    this.#o = o;
  }

  defer(topic: TopicAddress, message: NewMessage): Promise<void> {
    if (!this.#reachable) {
      return Promise.reject(
        new AppError("storage_unavailable", {
          message: "Neither this region nor a failover region can store the message right now.",
        }),
      );
    }
    // The neighbour keeps one copy per idempotency key (its Nats-Msg-Id), as JetStream does.
    const key = message.idempotencyKey;
    const same = (d: Deferred) =>
      d.message.idempotencyKey === key &&
      d.topic.topic === topic.topic &&
      d.topic.namespace.key === topic.namespace.key;
    if (key === null || !this.#waiting.some(same)) {
      this.#waiting.push({ topic, message, sentMs: this.#o.now() });
    }
    return Promise.resolve();
  }

  /** Whether a neighbour takes deferred publishes (false: `defer` fails as with none reachable). */
  setReachable(reachable: boolean): void {
    this.#reachable = reachable;
  }

  /** Deferred messages not yet brought home. */
  waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Brings every deferred message home, in the order deferred: its retention and delay less the
   * time it waited, dropped if it expired meanwhile; the home log's keys drop duplicates.
   */
  async relocate(): Promise<void> {
    while (this.#waiting.length > 0) {
      const d = this.#waiting[0]!;
      const waitedSeconds = Math.floor((this.#o.now() - d.sentMs) / 1000);
      const retentionSeconds = d.message.retentionSeconds - waitedSeconds;
      if (retentionSeconds > 0) {
        await this.#o.home.publish(d.topic, {
          ...d.message,
          retentionSeconds,
          delaySeconds: Math.max(0, d.message.delaySeconds - waitedSeconds),
        });
      }
      // Taken off only once home has it: a failed publish leaves it for the next pass.
      this.#waiting.shift();
    }
  }
}

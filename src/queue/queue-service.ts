// The queue's operations in domain terms: publish, receive, receive by ID, acknowledge and change
// visibility. HTTP routes validate input and call these; the Broker port does the storage.
import { AppError } from "../errors.js";
import type { Broker, Deferrer } from "./broker.js";
import type { BodyRef, BodyStore } from "./bodies.js";
import type { MessageCopies } from "./delivery/message-copies.js";
import type { ReceivedMessage } from "./delivery/received-message.js";
import type { DelayedPublishCap } from "./admission/delayed-publish-cap.js";
import { NamespaceCounts } from "./admission/namespace-counts.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";
import type { QueueObserver } from "./observer.js";
import { LIMITS } from "./limits.js";
import type { QueueContext } from "./use-cases/queue-context.js";
import { Publishing, type PublishInput, type PublishResult } from "./use-cases/publish.js";
import {
  LargeBodies,
  type BodyReading,
  type LargeStreams,
  type StreamedBody,
} from "./use-cases/large-bodies.js";
import { Receiving, type ReceiveOptions } from "./use-cases/receive.js";
import { ReceivingById } from "./use-cases/receive-by-id.js";
import { Leasing } from "./use-cases/leases.js";

export interface QueueServiceDeps {
  /** What the use cases share (createQueueContext); the pusher gets its parts from the same. */
  readonly context: QueueContext;
  /** Regional failover; without it a publish the store cannot take answers 503. */
  readonly deferrer?: Deferrer;
  /** Waiting receives per namespace on this gateway, capped (429 too_many_waiters past it). */
  readonly waiters?: NamespaceCounts;
  /** Delayed publishes per second per namespace (429 delayed_publish_rate_limited past it). */
  readonly delayedPublishes?: DelayedPublishCap;
  /** How many large bodies this gateway moves at once, and who hears of the numbers. */
  readonly largeStreams?: LargeStreams;
}

/** Messages read from a dead-letter topic at a time by redrive. */
const REDRIVE_BATCH = 100;

export class QueueService {
  readonly #broker: Broker;
  readonly #now: () => number;
  readonly #observer: QueueObserver;
  readonly #copies: MessageCopies;
  readonly #publishing: Publishing;
  readonly #receiving: Receiving;
  readonly #bodies: BodyStore | null;
  readonly #largeBodies: LargeBodies;
  readonly #receivingById: ReceivingById;
  readonly #leasing: Leasing;

  constructor(deps: QueueServiceDeps) {
    const ctx = deps.context;
    this.#bodies = ctx.bodies;
    this.#broker = ctx.broker;
    this.#now = ctx.now;
    this.#observer = ctx.observer;
    this.#copies = ctx.copies;
    this.#publishing = new Publishing(ctx, {
      deferrer: deps.deferrer,
      delayedPublishes: deps.delayedPublishes,
    });
    this.#largeBodies = new LargeBodies(ctx, this.#publishing, deps.largeStreams);
    this.#receivingById = new ReceivingById(ctx, this.#largeBodies);
    this.#leasing = new Leasing(ctx);
    this.#receiving = new Receiving(ctx, deps.waiters ?? new NamespaceCounts(0));
  }

  publish(topic: TopicAddress, input: PublishInput): Promise<PublishResult> {
    return this.#publishing.publish(topic, input);
  }

  /**
   * Publishes a body above the inline limit (LargeBodies.publishStreamed): the body first, then
   * the message that points at it.
   */
  publishStreamed(
    topic: TopicAddress,
    input: Omit<PublishInput, "payload">,
    body: StreamedBody,
  ): Promise<PublishResult> {
    return this.#largeBodies.publishStreamed(topic, input, body);
  }

  /** The bytes of a large body, read in a download slot (LargeBodies.openBody). */
  openBody(topic: TopicAddress, ref: BodyRef, reading: BodyReading): AsyncIterable<Uint8Array> {
    return this.#largeBodies.openBody(topic, ref, reading);
  }

  /** Hands out what the group has (Receiving.receive), waiting for it with `waitSeconds`. */
  receive(group: GroupAddress, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    return this.#receiving.receive(group, options);
  }

  /** Answers every waiting receive of this gateway now (with nothing): it is shutting down. */
  stopWaiting(): void {
    this.#receiving.stopWaiting();
  }

  /** Waiting receives on this gateway. */
  get waitingReceives(): number {
    return this.#receiving.waitingReceives;
  }

  /** Acknowledges the delivery the handle names (Leasing.acknowledge). */
  acknowledge(group: GroupAddress, receiptHandle: string): Promise<void> {
    return this.#leasing.acknowledge(group, receiptHandle);
  }

  /** Sets the lease to end `seconds` from now (Leasing.changeVisibility); returns the deadline. */
  changeVisibility(group: GroupAddress, receiptHandle: string, seconds: number): Promise<Date> {
    return this.#leasing.changeVisibility(group, receiptHandle, seconds);
  }

  /** Leases the message with this ID (ReceivingById.receiveById), wherever it is in the group. */
  receiveById(
    group: GroupAddress,
    messageId: string,
    options: Omit<ReceiveOptions, "maxMessages">,
  ): Promise<ReceivedMessage> {
    return this.#receivingById.receiveById(group, messageId, options);
  }

  /**
   * Moves up to `limit` messages of a dead-letter topic back, oldest first: each to `target`,
   * or (without one) to the topic it was dead-lettered from, as a new message (its delivery
   * count starts again at 1) with the time it had left; then removes it from the dead-letter
   * topic. A message that is not a dead-letter copy stays unless a target is given; an expired
   * one is removed. Each is copied once, whichever redrive (or retry of one) moves it: the copy
   * carries a deduplication token of its place in the dead-letter topic.
   */
  async redrive(
    deadLetters: TopicAddress,
    options: { readonly target: string | null; readonly limit: number },
  ): Promise<{ readonly moved: number; readonly remaining: number }> {
    if ((await this.#broker.countMessages(deadLetters)) === null) {
      throw new AppError("topic_not_found");
    }
    if (options.target === deadLetters.topic) {
      throw new AppError("invalid_request_body", {
        message: "A dead-letter topic cannot be redriven into itself.",
      });
    }
    let moved = 0;
    let from = 1;
    while (moved < options.limit) {
      const batch = await this.#broker.readTopic(deadLetters, from, REDRIVE_BATCH);
      if (batch.length === 0) break;
      for (const { streamSeq, message } of batch) {
        from = streamSeq + 1;
        if (message.expiresAtMs <= this.#now()) {
          await this.#broker.removeMessage(deadLetters, streamSeq);
          if (message.body) await this.#bodies?.remove(deadLetters, message.body);
          continue;
        }
        const target = options.target ?? message.deadLetter?.topic;
        if (!target || target === deadLetters.topic) continue; // nowhere to go: it stays
        const left = Math.ceil((message.expiresAtMs - this.#now()) / 1000);
        await this.#copies.copy(
          deadLetters,
          message,
          { namespace: deadLetters.namespace, topic: target },
          {
            retentionSeconds: Math.max(LIMITS.retentionSeconds.min, left),
            dedupToken: `redrive\n${deadLetters.topic}\n${streamSeq}`,
          },
        );
        await this.#broker.removeMessage(deadLetters, streamSeq);
        if (message.body) await this.#bodies?.remove(deadLetters, message.body);
        moved++;
        if (moved >= options.limit) break;
      }
    }
    this.#observer.redriven(moved);
    return { moved, remaining: (await this.#broker.countMessages(deadLetters)) ?? 0 };
  }
}

// The queue's operations as the HTTP routes call them: a thin facade over the use-case modules
// (src/queue/use-cases/), which share one QueueContext. The pusher is given what it needs by the
// composition root (gateway.ts), never through this class.
import type { Deferrer } from "./broker.js";
import type { BodyRef } from "./bodies.js";
import type { ReceivedMessage } from "./delivery/received-message.js";
import type { DelayedPublishCap } from "./admission/rates/delayed-publish-cap.js";
import { NamespaceCounts } from "./admission/in-flight/namespace-counts.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";
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
import { Redriving } from "./use-cases/redrive.js";

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

export class QueueService {
  readonly #publishing: Publishing;
  readonly #largeBodies: LargeBodies;
  readonly #receiving: Receiving;
  readonly #receivingById: ReceivingById;
  readonly #leasing: Leasing;
  readonly #redriving: Redriving;

  constructor(deps: QueueServiceDeps) {
    const ctx = deps.context;
    this.#publishing = new Publishing(ctx, {
      deferrer: deps.deferrer,
      delayedPublishes: deps.delayedPublishes,
    });
    this.#largeBodies = new LargeBodies(ctx, this.#publishing, deps.largeStreams);
    this.#receiving = new Receiving(ctx, deps.waiters ?? new NamespaceCounts(0));
    this.#receivingById = new ReceivingById(ctx, this.#largeBodies);
    this.#leasing = new Leasing(ctx);
    this.#redriving = new Redriving(ctx);
  }

  /** Stores a message (Publishing.publish), deduplicated by its idempotency key. */
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

  /** Moves dead-lettered messages back, oldest first (Redriving.redrive). */
  redrive(
    deadLetters: TopicAddress,
    options: { readonly target: string | null; readonly limit: number },
  ): Promise<{ readonly moved: number; readonly remaining: number }> {
    return this.#redriving.redrive(deadLetters, options);
  }
}

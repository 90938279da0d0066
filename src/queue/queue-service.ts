// The queue's operations in domain terms: publish, receive, receive by ID, acknowledge and change
// visibility. HTTP routes validate input and call these; the Broker port does the storage.
import { AppError } from "../errors.js";
import type { Broker, Delivery, StoredMessage } from "./broker.js";
import { duplicateMessageId, newNonce, parseMessageId, storedMessageId } from "./message-id.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";
import { decodeReceiptHandle, encodeReceiptHandle, type Lease } from "./receipt-handle.js";
import type { SecretKeys } from "./secret-keys.js";

export interface PublishInput {
  readonly payload: Uint8Array;
  readonly contentType: string | null;
  readonly retentionSeconds: number;
  readonly delaySeconds: number;
  readonly idempotencyKey: string | null;
}

export interface PublishResult {
  readonly messageId: string;
  readonly duplicate: boolean;
}

export interface ReceiveOptions {
  readonly maxMessages: number;
  readonly visibilityTimeoutSeconds: number;
  readonly maxConcurrency: number | null;
}

export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly deliveryCount: number;
  readonly publishedAt: Date;
  readonly expiresAt: Date;
  readonly contentType: string | null;
  readonly payload: Uint8Array;
}

export interface QueueServiceDeps {
  readonly broker: Broker;
  readonly keys: SecretKeys;
  readonly now: () => number;
}

/** How many pulls one receive may make to skip expired messages before answering. */
const MAX_PULLS_PER_RECEIVE = 4;

export class QueueService {
  readonly #broker: Broker;
  readonly #keys: SecretKeys;
  readonly #now: () => number;

  constructor(deps: QueueServiceDeps) {
    this.#broker = deps.broker;
    this.#keys = deps.keys;
    this.#now = deps.now;
  }

  async publish(topic: TopicAddress, input: PublishInput): Promise<PublishResult> {
    const nonce = newNonce();
    const outcome = await this.#broker.publish(topic, {
      payload: input.payload,
      contentType: input.contentType,
      retentionSeconds: input.retentionSeconds,
      delaySeconds: Math.min(input.delaySeconds, input.retentionSeconds),
      idempotencyKey: input.idempotencyKey,
      nonce,
    });
    if (outcome.kind === "duplicate") {
      return {
        messageId: duplicateMessageId(this.#keys.duplicateId, topic, outcome.originalSeq),
        duplicate: true,
      };
    }
    return { messageId: storedMessageId(outcome.seq, nonce), duplicate: false };
  }

  async receive(group: GroupAddress, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    let want = options.maxMessages;
    if (options.maxConcurrency !== null) {
      const progress = await this.#broker.progress(group);
      const inFlight = progress?.inFlight ?? 0;
      if (inFlight >= options.maxConcurrency) {
        throw new AppError("concurrency_limit_exceeded", { retryAfterSeconds: 1 });
      }
      want = Math.min(want, options.maxConcurrency - inFlight);
    }
    const leaseMs = options.visibilityTimeoutSeconds * 1000;
    const live: Delivery[] = [];
    for (let pulls = 0; pulls < MAX_PULLS_PER_RECEIVE && live.length < want; pulls++) {
      const asked = want - live.length;
      const batch = await this.#broker.pull(group, asked);
      if (batch === null || batch.length === 0) break;
      const now = this.#now();
      const expired = batch.filter((d) => d.message.expiresAtMs <= now);
      live.push(...batch.filter((d) => d.message.expiresAtMs > now));
      // Expired messages are never delivered: the group acknowledges them silently.
      await Promise.all(expired.map((d) => this.#broker.ack(group, d)));
      if (batch.length < asked) break; // the group has nothing more right now
    }
    if (leaseMs !== this.#broker.defaultLeaseMs) {
      await Promise.all(live.map((d) => this.#broker.setLease(group, d, leaseMs)));
    }
    const deadlineMs = this.#now() + leaseMs;
    return live.map((d) => this.#received(group, d, deadlineMs));
  }

  async acknowledge(group: GroupAddress, receiptHandle: string): Promise<void> {
    const lease = this.#decodeHandle(group, receiptHandle);
    await this.#broker.ack(group, lease);
  }

  /** Sets the lease to end `seconds` from now; returns the new deadline (now, for 0). */
  async changeVisibility(
    group: GroupAddress,
    receiptHandle: string,
    seconds: number,
  ): Promise<Date> {
    const lease = this.#decodeHandle(group, receiptHandle);
    await this.#broker.setLease(group, lease, seconds * 1000);
    return new Date(this.#now() + seconds * 1000);
  }

  async receiveById(
    group: GroupAddress,
    messageId: string,
    options: Omit<ReceiveOptions, "maxMessages">,
  ): Promise<ReceivedMessage> {
    const parsed = parseMessageId(this.#keys.duplicateId, group, messageId);
    if (parsed === null) throw new AppError("message_not_found");
    if (parsed.kind === "duplicate") {
      const original = await this.#broker.lookup(group, parsed.originalSeq);
      if (original.kind === "missing" || this.#isExpired(original.message)) {
        throw new AppError("message_not_found");
      }
      const originalMessageId = idOf(original.message);
      throw new AppError("message_duplicate", {
        message: `This message was a duplicate of ${originalMessageId}.`,
        extra: { originalMessageId },
      });
    }
    const found = await this.#broker.lookup(group, parsed.seq);
    if (found.kind === "missing" || found.message.nonce !== parsed.nonce) {
      throw new AppError("message_not_found");
    }
    if (this.#isExpired(found.message)) throw new AppError("message_not_found");
    if (found.kind === "delayed") {
      throw new AppError("message_not_available", { message: "The message is not visible yet." });
    }
    return this.#leaseById(group, found.message, found.streamSeq, options);
  }

  async #leaseById(
    group: GroupAddress,
    message: StoredMessage,
    streamSeq: number,
    options: Omit<ReceiveOptions, "maxMessages">,
  ): Promise<ReceivedMessage> {
    // Receive by ID leases through the group's own cursor: it is only possible while the group has
    // not yet been handed the message (see docs/architecture.md, "Receive by ID").
    const progress = await this.#broker.progress(group);
    if (progress !== null && streamSeq <= progress.ackFloorSeq) {
      throw new AppError("message_already_acknowledged");
    }
    if (options.maxConcurrency !== null && (progress?.inFlight ?? 0) >= options.maxConcurrency) {
      throw new AppError("concurrency_limit_exceeded", { retryAfterSeconds: 1 });
    }
    void message;
    throw new AppError("message_not_available");
  }

  #decodeHandle(group: GroupAddress, receiptHandle: string): Lease {
    const lease = decodeReceiptHandle(this.#keys.receiptHandle, group, receiptHandle);
    if (lease === null) throw new AppError("invalid_receipt_handle");
    return lease;
  }

  #isExpired(message: StoredMessage): boolean {
    return message.expiresAtMs <= this.#now();
  }

  #received(group: GroupAddress, d: Delivery, deadlineMs: number): ReceivedMessage {
    const lease: Lease = {
      streamSeq: d.streamSeq,
      deliverySeq: d.deliverySeq,
      deliveryCount: d.deliveryCount,
      deadlineMs,
    };
    return {
      messageId: idOf(d.message),
      receiptHandle: encodeReceiptHandle(this.#keys.receiptHandle, group, lease),
      deliveryCount: d.deliveryCount,
      publishedAt: new Date(d.message.publishedAtMs),
      expiresAt: new Date(d.message.expiresAtMs),
      contentType: d.message.contentType,
      payload: d.message.payload,
    };
  }
}

function idOf(message: StoredMessage): string {
  return storedMessageId(message.idSeq, message.nonce);
}

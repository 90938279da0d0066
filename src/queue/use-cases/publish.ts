// Publishing a message: the delayed-publish rate, the message stored (deduplicated by its
// idempotency key), or kept by a neighbour region while the home store is down. A large body's
// message is stored the same way once its body is (large-bodies.ts).
import { isAppError } from "../../errors.js";
import type { DelayedPublishCap } from "../admission/rates/delayed-publish-cap.js";
import type { BodyRef } from "../bodies.js";
import type { Deferrer, MessageHeaders, TraceContext } from "../broker.js";
import { duplicateMessageId, newNonce, storedMessageId } from "../identity/message-id.js";
import type { TopicAddress } from "../namespace.js";
import type { QueueContext } from "./queue-context.js";

export interface PublishInput {
  /** An inline body; a large one is given to `publishStreamed` instead. */
  readonly payload: Uint8Array;
  readonly contentType: string | null;
  readonly retentionSeconds: number;
  readonly delaySeconds: number;
  readonly idempotencyKey: string | null;
  readonly trace: TraceContext | null;
  /** The message's own headers (checked and bounded by the caller). */
  readonly headers: MessageHeaders;
}

export type PublishResult =
  | { readonly deferred: false; readonly messageId: string; readonly duplicate: boolean }
  /** Stored in a neighbour region during a regional outage: delivered once home recovers. */
  | { readonly deferred: true };

export interface PublishDeps {
  /** Regional failover; without it a publish the store cannot take answers 503. */
  readonly deferrer?: Deferrer | undefined;
  /** Delayed publishes per second per namespace (429 delayed_publish_rate_limited past it). */
  readonly delayedPublishes?: DelayedPublishCap | undefined;
}

export class Publishing {
  readonly #ctx: QueueContext;
  readonly #deferrer: Deferrer | null;
  readonly #delayedPublishes: DelayedPublishCap | null;

  constructor(ctx: QueueContext, deps: PublishDeps = {}) {
    this.#ctx = ctx;
    this.#deferrer = deps.deferrer ?? null;
    this.#delayedPublishes = deps.delayedPublishes ?? null;
  }

  /** Whether a publish the store cannot take is kept by a neighbour region (inline ones only). */
  get defers(): boolean {
    return this.#deferrer !== null;
  }

  /**
   * Stores a message. With an idempotency key, a publish while an earlier message with the key
   * lives is dropped (201 with the duplicate's own ID); once that message has expired, the key
   * stores a new one. The store decides this atomically (see docs/architecture.md).
   */
  async publish(topic: TopicAddress, input: PublishInput): Promise<PublishResult> {
    this.takeDelayedTurn(topic, input.delaySeconds);
    return this.store(topic, input, null);
  }

  /** A delayed publish counts against its namespace's rate (throws 429 past it). */
  takeDelayedTurn(topic: TopicAddress, delaySeconds: number): void {
    if (delaySeconds > 0) this.#delayedPublishes?.take(topic.namespace.key);
  }

  /** Stores the message; `body`: its large body, already in the body store (never deferred). */
  async store(
    topic: TopicAddress,
    input: PublishInput,
    body: BodyRef | null,
  ): Promise<PublishResult> {
    const ctx = this.#ctx;
    const nonce = newNonce();
    const message = {
      payload: input.payload,
      ...(body ? { body } : {}),
      contentType: input.contentType,
      retentionSeconds: input.retentionSeconds,
      delaySeconds: Math.min(input.delaySeconds, input.retentionSeconds),
      idempotencyKey: input.idempotencyKey,
      nonce,
      trace: input.trace,
      headers: input.headers,
    };
    let outcome;
    try {
      outcome = await ctx.broker.publish(topic, message);
    } catch (err) {
      // The home store cannot take it: a neighbour region keeps it until home recovers.
      if (body || !this.#deferrer || !isAppError(err) || err.code !== "storage_unavailable") {
        throw err;
      }
      await this.#deferrer.defer(topic, message);
      ctx.observer.deferred();
      return { deferred: true };
    }
    // Waiting receives on this gateway that found no topic look again now (it may be new).
    ctx.longPolls.published(topic);
    if (outcome.kind === "stored") {
      ctx.observer.published(false);
      return { deferred: false, messageId: storedMessageId(outcome.seq, nonce), duplicate: false };
    }
    ctx.observer.published(true);
    return {
      deferred: false,
      messageId: duplicateMessageId(ctx.keys.duplicateId, topic, outcome.originalSeq),
      duplicate: true,
    };
  }
}

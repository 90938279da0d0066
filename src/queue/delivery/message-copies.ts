// Copies of a stored message into another topic: a dead-letter copy (with where it came from)
// and a redriven message. Payload, content type, trace and headers go unchanged, a large body is
// copied with it, and each copy is stored once whatever retries make it (a deduplication token).
import { AppError } from "../../errors.js";
import type { MessageLog, NewMessage, StoredMessage } from "../broker.js";
import type { BodyRef, BodyStore } from "../bodies.js";
import { newNonce, storedMessageId } from "../identity/message-id.js";
import { LIMITS } from "../limits.js";
import type { GroupAddress, TopicAddress } from "../namespace.js";
import type { DeadLetterSettings } from "../settings/consumer-settings.js";

export interface MessageCopiesDeps {
  readonly broker: Pick<MessageLog, "publish">;
  readonly bodies: BodyStore | null;
  readonly now: () => number;
}

export class MessageCopies {
  readonly #broker: Pick<MessageLog, "publish">;
  readonly #bodies: BodyStore | null;
  readonly #now: () => number;

  constructor(deps: MessageCopiesDeps) {
    this.#broker = deps.broker;
    this.#bodies = deps.bodies;
    this.#now = deps.now;
  }

  /**
   * Publishes the dead-letter copy: payload, content type, trace and headers unchanged, the time
   * the message had left (at least the minimum retention), and where it came from. One copy per
   * message and group: every attempt uses the same deduplication token.
   */
  async toDeadLetter(
    group: GroupAddress,
    message: StoredMessage,
    streamSeq: number,
    deliveryCount: number,
    dl: DeadLetterSettings,
  ): Promise<void> {
    const left = Math.ceil((message.expiresAtMs - this.#now()) / 1000);
    await this.copy(
      group,
      message,
      { namespace: group.namespace, topic: dl.topic },
      {
        retentionSeconds: Math.min(
          LIMITS.retentionSeconds.max,
          Math.max(LIMITS.retentionSeconds.min, left),
        ),
        deadLetter: {
          topic: group.topic,
          consumerGroup: group.group,
          messageId: storedMessageId(message.idSeq, message.nonce),
          deliveryCount,
        },
        dedupToken: `dead-letter\n${group.topic}\n${group.group}\n${streamSeq}`,
      },
    );
  }

  /**
   * Stores a copy of a message (a dead-letter copy, a redriven message) in `to`: payload,
   * content type, trace and headers unchanged. A large body is copied too, so the copy stays
   * whole when the original expires or is removed; a copy that turns out a duplicate leaves its
   * body to the body store's sweep.
   */
  async copy(
    from: TopicAddress,
    message: StoredMessage,
    to: TopicAddress,
    o: Pick<NewMessage, "retentionSeconds" | "deadLetter" | "dedupToken">,
  ): Promise<void> {
    let body: BodyRef | undefined;
    if (message.body) {
      if (!this.#bodies) throw new AppError("storage_unavailable");
      body = await this.#bodies.copy(from, message.body, to, o.retentionSeconds);
    }
    await this.#broker.publish(to, {
      payload: message.payload,
      ...(body ? { body } : {}),
      contentType: message.contentType,
      delaySeconds: 0,
      idempotencyKey: null,
      nonce: newNonce(),
      trace: message.trace,
      headers: message.headers,
      ...o,
    });
    if (body) await this.#bodies?.commit(to, body, o.retentionSeconds).catch(() => undefined);
  }
}

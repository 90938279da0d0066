// Receiving one message by its ID, wherever it is in the group: a lease by ID (counted against
// the concurrency limit like the cursor's), the dead-letter move past `maxDeliveries`, and for a
// large body a download slot reserved before anything is leased.
import { AppError } from "../../errors.js";
import { largeBodyBusy } from "../admission/refusals.js";
import type { StoredMessage } from "../broker.js";
import type { ReceivedMessage } from "../delivery/received-message.js";
import { parseMessageId, storedMessageId } from "../identity/message-id.js";
import type { GroupAddress } from "../namespace.js";
import type { LargeBodies } from "./large-bodies.js";
import type { QueueContext } from "./queue-context.js";
import type { ReceiveOptions } from "./receive.js";

/**
 * How long a receive by ID of a large message waits for a download slot before 503
 * large_body_busy (downloads of 100 MB end within seconds; a waiting one holds no chunk).
 */
const RECEIVE_BY_ID_SLOT_WAIT_MS = 5000;

export class ReceivingById {
  readonly #ctx: QueueContext;
  readonly #largeBodies: Pick<LargeBodies, "takeDownloadSlot">;

  /** `largeBodies`: the gateway's download slots, which a large message's receive takes first. */
  constructor(ctx: QueueContext, largeBodies: Pick<LargeBodies, "takeDownloadSlot">) {
    this.#ctx = ctx;
    this.#largeBodies = largeBodies;
  }

  async receiveById(
    group: GroupAddress,
    messageId: string,
    options: Omit<ReceiveOptions, "maxMessages">,
  ): Promise<ReceivedMessage> {
    const parsed = parseMessageId(this.#ctx.keys.duplicateId, group, messageId);
    if (parsed === null) throw new AppError("message_not_found");
    if (parsed.kind === "duplicate") {
      const original = await this.#ctx.broker.lookup(group, parsed.originalSeq);
      if (original.kind === "missing" || original.message.expiresAtMs <= this.#ctx.now()) {
        throw new AppError("message_not_found");
      }
      const originalMessageId = storedMessageId(original.message.idSeq, original.message.nonce);
      throw new AppError("message_duplicate", {
        message: `This message was a duplicate of ${originalMessageId}.`,
        extra: { originalMessageId },
      });
    }
    const found = await this.#ctx.broker.lookup(group, parsed.seq);
    if (found.kind === "missing" || found.message.nonce !== parsed.nonce) {
      throw new AppError("message_not_found");
    }
    if (found.message.expiresAtMs <= this.#ctx.now()) throw new AppError("message_not_found");
    if (found.kind === "delayed") {
      throw new AppError("message_not_available", { message: "The message is not visible yet." });
    }
    if (!found.message.body) return this.#receiveFoundById(group, found, options);
    // A large body is streamed: its download slot is taken before anything is leased, so a
    // gateway at its cap refuses with nothing changed (the client comes back), never with a
    // message leased that it cannot stream. It waits its turn a little first: a pushed large
    // message's handler receives it by ID, and a refusal fails that push (a delivery counted).
    const slot = await this.#largeBodies.takeDownloadSlot(
      RECEIVE_BY_ID_SLOT_WAIT_MS,
      options.signal ?? null,
    );
    if (slot === null || options.signal?.aborted) {
      slot?.release();
      throw largeBodyBusy();
    }
    try {
      return { ...(await this.#receiveFoundById(group, found, options)), downloadSlot: slot };
    } catch (err) {
      slot.release();
      throw err;
    }
  }

  async #receiveFoundById(
    group: GroupAddress,
    found: { readonly streamSeq: number; readonly message: StoredMessage },
    options: Omit<ReceiveOptions, "maxMessages">,
  ): Promise<ReceivedMessage> {
    const lease = await this.#ctx.idLeases.take(
      group,
      found.streamSeq,
      options.visibilityTimeoutSeconds,
      options.maxConcurrency,
    );
    const dl = this.#ctx.settingsOf(group)?.deadLetter;
    if (dl && lease.deliveryCount > dl.maxDeliveries) {
      // Leased by ID first, so nobody else has it while it moves; if this gateway dies now, the
      // lease runs out and the next delivery moves it (the copy is stored once).
      await this.#ctx.copies.toDeadLetter(
        group,
        found.message,
        found.streamSeq,
        lease.deliveryCount,
        dl,
      );
      await this.#ctx.idLeases.update(group, lease, (l) => ({ ...l, state: "acked" }));
      this.#ctx.observer.deadLettered(group);
      await this.#ctx.leaseLedger.noteDeadLettered(group).catch(() => undefined);
      throw new AppError("message_dead_lettered");
    }
    this.#ctx.observer.delivered(lease.deliveryCount);
    return this.#ctx.handOut.received(group, found.message, lease);
  }
}

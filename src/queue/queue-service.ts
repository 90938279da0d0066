// The queue's operations in domain terms: publish, receive, receive by ID, acknowledge and change
// visibility. HTTP routes validate input and call these; the Broker port does the storage.
import { AppError } from "../errors.js";
import type { Broker, Deferrer, Delivery, StoredMessage } from "./broker.js";
import type { BodyRef, BodyStore } from "./bodies.js";
import type { GroupAcks } from "./delivery/group-acks.js";
import type { GroupLeases } from "./delivery/group-leases.js";
import type { HandOut } from "./delivery/hand-out.js";
import type { MessageCopies } from "./delivery/message-copies.js";
import type { ReceivedMessage } from "./delivery/received-message.js";
import type { DelayedPublishCap } from "./admission/delayed-publish-cap.js";
import type { IdLeases } from "./id-leases.js";
import { KeyedLock } from "./keyed-lock.js";
import type { LongPolls } from "./long-polls.js";
import { NamespaceCounts } from "./admission/namespace-counts.js";
import { parseMessageId, storedMessageId } from "./identity/message-id.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";
import { decodeReceiptHandle, type Lease } from "./identity/receipt-handle.js";
import type { QueueObserver } from "./observer.js";
import { LIMITS, MAX_PULLS_AT_LIMIT } from "./limits.js";
import type { ConsumerSettings } from "./settings/consumer-settings.js";
import type { SecretKeys } from "./identity/secret-keys.js";
import type { QueueContext } from "./use-cases/queue-context.js";
import { Publishing, type PublishInput, type PublishResult } from "./use-cases/publish.js";
import {
  LargeBodies,
  type BodyReading,
  type LargeStreams,
  type StreamedBody,
} from "./use-cases/large-bodies.js";

export interface ReceiveOptions {
  readonly maxMessages: number;
  readonly visibilityTimeoutSeconds: number;
  readonly maxConcurrency: number | null;
  /** With nothing to hand out at once, wait up to this long for a message (long polling). */
  readonly waitSeconds?: number;
  /** Aborts when the client hangs up: a waiting receive ends, and nothing stays leased. */
  readonly signal?: AbortSignal;
}

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

/** How many pulls one receive may make to skip expired messages before answering. */
const MAX_PULLS_PER_RECEIVE = 4;

/**
 * How long a receive by ID of a large message waits for a download slot before 503
 * large_body_busy (downloads of 100 MB end within seconds; a waiting one holds no chunk).
 */
const RECEIVE_BY_ID_SLOT_WAIT_MS = 5000;

export class QueueService {
  readonly #broker: Broker;
  readonly #keys: SecretKeys;
  readonly #now: () => number;
  readonly #observer: QueueObserver;
  readonly #idLeases: IdLeases;
  readonly #groupLeases: GroupLeases;
  readonly #settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly #copies: MessageCopies;
  readonly #handOut: HandOut;
  readonly #acks: GroupAcks;
  readonly #publishing: Publishing;
  readonly #concurrencyTurns = new KeyedLock();
  readonly #longPolls: LongPolls;
  readonly #waiters: NamespaceCounts;
  readonly #bodies: BodyStore | null;
  readonly #largeBodies: LargeBodies;

  constructor(deps: QueueServiceDeps) {
    const ctx = deps.context;
    this.#bodies = ctx.bodies;
    this.#broker = ctx.broker;
    this.#keys = ctx.keys;
    this.#now = ctx.now;
    this.#observer = ctx.observer;
    this.#idLeases = ctx.idLeases;
    this.#groupLeases = ctx.groupLeases;
    this.#longPolls = ctx.longPolls;
    this.#settingsOf = ctx.settingsOf;
    this.#copies = ctx.copies;
    this.#handOut = ctx.handOut;
    this.#acks = ctx.acks;
    this.#publishing = new Publishing(ctx, {
      deferrer: deps.deferrer,
      delayedPublishes: deps.delayedPublishes,
    });
    this.#largeBodies = new LargeBodies(ctx, this.#publishing, deps.largeStreams);
    this.#waiters = deps.waiters ?? new NamespaceCounts(0);
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

  async receive(group: GroupAddress, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const waitMs = (options.waitSeconds ?? 0) * 1000;
    const spare = this.#longPolls.takeSpare(group);
    // A group this gateway follows for waiting receives has its feed pulling already: a waiting
    // receive joins it without a pull of its own, so clients that all come back at the end of
    // their waits cost a pull per group, not one each (the feed hands out what is there).
    if (waitMs === 0 || spare !== null || !this.#longPolls.following(group)) {
      const now = await this.#receiveNow(group, options, spare);
      if (now.length > 0 || waitMs === 0) return now;
    }
    // Long polling: wait for a delivery (one shared feed per group on this gateway), then hand
    // it out like the first message of a pull; one that may not be handed out (expired, held by
    // ID, dead-lettered, over the concurrency limit) means waiting on. A namespace with as many
    // waiters here as it may have is told so (nothing was leased by the look above).
    const ns = group.namespace.key;
    if (!this.#waiters.take(ns)) throw new AppError("too_many_waiters", { retryAfterSeconds: 1 });
    try {
      const untilMs = this.#now() + waitMs;
      for (;;) {
        const d = await this.#longPolls.wait(group, untilMs, options.signal ?? null);
        if (d === null) return [];
        const got = await this.#receiveNow(group, options, d);
        if (got.length > 0) return got;
      }
    } finally {
      this.#waiters.release(ns);
    }
  }

  /** Answers every waiting receive of this gateway now (with nothing): it is shutting down. */
  stopWaiting(): void {
    this.#longPolls.close();
  }

  /** Waiting receives on this gateway. */
  get waitingReceives(): number {
    return this.#longPolls.waiting;
  }

  /** A receive that does not wait; `first` is a delivery a waiting receive was woken with. */
  async #receiveNow(
    group: GroupAddress,
    options: ReceiveOptions,
    first: Delivery | null,
  ): Promise<ReceivedMessage[]> {
    if (options.maxConcurrency === null) {
      return this.#receive(group, options, options.maxMessages, undefined, first);
    }
    // The in-flight count is read, then the pull made: receives of one group with a limit take
    // turns on this gateway, so only receives racing through different gateways can overshoot.
    const release = await this.#concurrencyTurns.acquire(groupKey(group));
    try {
      const progress = await this.#broker.progress(group);
      // A delivery a waiting receive was woken with is already counted in flight.
      const inFlight = (progress?.inFlight ?? 0) - (first ? 1 : 0);
      if (inFlight >= options.maxConcurrency) {
        const d = await this.#atLimit(
          group,
          progress?.inFlight ?? 0,
          options.maxConcurrency,
          first,
        );
        if (d === null) {
          if (first) return []; // others took the group to its limit while this receive waited
          throw new AppError("concurrency_limit_exceeded", { retryAfterSeconds: 1 });
        }
        return await this.#receive(group, options, 1, release, d, 1);
      }
      return await this.#receive(
        group,
        options,
        Math.min(options.maxMessages, options.maxConcurrency - inFlight),
        release,
        first,
      );
    } finally {
      release();
    }
  }

  /**
   * At the limit by JetStream's count, which includes messages that are not in flight: those
   * whose lease ran out and those released unseen here earlier ("bounces"), until they are
   * delivered again. JetStream hands those out before new messages, so this pulls one at a time
   * until the count without the redeliveries pulled is under the limit, one pulled is a message
   * whose own lease ran out (handing it out adds nothing in flight), a new message comes (no more
   * redeliveries are waiting), or nothing does: discounting only the one pulled would, with two
   * bounces waiting, bounce them in turn for ever. With room, the lowest sequence pulled is handed
   * out; every other one is released unseen and recorded as a bounce. `counted`: JetStream's
   * count; `first`: a delivery a waiting receive was woken with (counted already). Null: nothing
   * may be handed out.
   */
  async #atLimit(
    group: GroupAddress,
    counted: number,
    limit: number,
    first: Delivery | null,
  ): Promise<Delivery | null> {
    const held: Delivery[] = [];
    let notInFlight = 0;
    let ranOut: Delivery | null = null;
    let fresh = false;
    const look = async (d: Delivery, alreadyCounted: boolean) => {
      held.push(d);
      if (alreadyCounted || d.deliveryCount > 1) notInFlight++;
      if (d.deliveryCount <= 1) fresh = true;
      else if (counted - notInFlight >= limit && (await this.#leaseRanOut(group, d))) ranOut = d;
    };
    if (first) await look(first, true);
    while (
      counted - notInFlight >= limit &&
      ranOut === null &&
      !fresh &&
      held.length < Math.min(MAX_PULLS_AT_LIMIT, counted - limit + 1)
    ) {
      const d = (await this.#broker.pull(group, 1))?.[0];
      if (d === undefined) break;
      await look(d, false);
    }
    held.sort((a, b) => a.streamSeq - b.streamSeq);
    const pick = counted - notInFlight < limit ? held[0] : (ranOut ?? undefined);
    for (const d of held) {
      if (d === pick) continue;
      // Recorded before the release: the message may come back at once, to any gateway.
      await this.#broker.noteLimitBounce(group, d.streamSeq, d.deliveryCount);
      await this.#broker.setLease(group, d, 0);
    }
    return pick ?? null;
  }

  /**
   * Whether `d` is a redelivery whose earlier delivery was handed out (its lease ran out or was
   * released), so handing it out adds nothing in flight; not when that delivery was bounced at
   * the concurrency limit (it was never in flight).
   */
  async #leaseRanOut(group: GroupAddress, d: Delivery): Promise<boolean> {
    if (d.deliveryCount <= 1) return false;
    return (await this.#broker.lastLimitBounce(group, d.streamSeq)) !== d.deliveryCount - 1;
  }

  /** `pulled` is told once the pulls are done (the turn of a limited receive ends there). */
  async #receive(
    group: GroupAddress,
    options: ReceiveOptions,
    want: number,
    pulled: () => void = () => undefined,
    first: Delivery | null = null,
    maxPulls = MAX_PULLS_PER_RECEIVE,
  ): Promise<ReceivedMessage[]> {
    const leaseMs = options.visibilityTimeoutSeconds * 1000;
    // Taken before the pull: the server's lease starts later, so a handle never claims more time
    // than the server gives (the stale-handle check relies on it).
    const deadlineMs = this.#now() + leaseMs;
    const taken: Delivery[] = [];
    const live: Delivery[] = [];
    try {
      for (let pulls = 0; pulls < maxPulls && live.length < want; pulls++) {
        const asked = want - live.length;
        const batch = first ? [first] : await this.#broker.pull(group, asked);
        const woken = first !== null;
        first = null;
        if (batch === null || batch.length === 0) break;
        taken.push(...batch);
        live.push(...(await this.#handOut.admit(group, batch, deadlineMs)));
        if (!woken && batch.length < asked) break; // the group has nothing more right now
      }
      pulled();
      await this.#handOut.lease(group, live, leaseMs);
    } catch (err) {
      // Nothing reaches the caller: release what was pulled rather than leave it leased to nobody.
      await Promise.allSettled(taken.map((d) => this.#broker.setLease(group, d, 0)));
      throw err;
    }
    if (options.signal?.aborted) {
      // The client hung up while this receive waited or pulled: nothing stays leased to it.
      await Promise.allSettled(live.map((d) => this.#broker.setLease(group, d, 0)));
      return [];
    }
    return live.map((d) => this.#handOut.handOut(group, d, deadlineMs));
  }

  async acknowledge(group: GroupAddress, receiptHandle: string): Promise<void> {
    await this.#acks.acknowledge(group, this.#decodeHandle(group, receiptHandle), undefined, true);
  }

  /** Sets the lease to end `seconds` from now; returns the new deadline (now, for 0). */
  async changeVisibility(
    group: GroupAddress,
    receiptHandle: string,
    seconds: number,
  ): Promise<Date> {
    const lease = this.#decodeHandle(group, receiptHandle);
    const deadlineMs = this.#now() + seconds * 1000;
    if (lease.kind === "id") {
      await this.#idLeases.update(group, lease, (l) => {
        if (l.state === "acked") throw new AppError("message_already_acknowledged");
        return { ...l, state: seconds === 0 ? "released" : "leased", deadlineMs };
      });
    } else {
      await this.#acks.assertCurrent(group, lease);
      // A pushed message's handler set its lease: the pusher must not override it afterwards.
      if (this.#settingsOf(group)?.push) {
        await this.#broker.noteHandlerLease(group, lease.streamSeq, lease.deliveryCount);
      }
      await this.#groupLeases.set(group, lease, deadlineMs);
    }
    return new Date(deadlineMs);
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
      throw new AppError("large_body_busy", { retryAfterSeconds: 1 });
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
    const lease = await this.#idLeases.take(
      group,
      found.streamSeq,
      options.visibilityTimeoutSeconds,
      options.maxConcurrency,
    );
    const dl = this.#settingsOf(group)?.deadLetter;
    if (dl && lease.deliveryCount > dl.maxDeliveries) {
      // Leased by ID first, so nobody else has it while it moves; if this gateway dies now, the
      // lease runs out and the next delivery moves it (the copy is stored once).
      await this.#copies.toDeadLetter(
        group,
        found.message,
        found.streamSeq,
        lease.deliveryCount,
        dl,
      );
      await this.#idLeases.update(group, lease, (l) => ({ ...l, state: "acked" }));
      this.#observer.deadLettered(group);
      await this.#broker.noteDeadLettered(group).catch(() => undefined);
      throw new AppError("message_dead_lettered");
    }
    this.#observer.delivered(lease.deliveryCount);
    return this.#handOut.received(group, found.message, lease);
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

  #decodeHandle(group: GroupAddress, receiptHandle: string): Lease {
    const epoch = this.#broker.groupEpoch(group);
    const lease = decodeReceiptHandle(this.#keys.receiptHandle, group, receiptHandle, epoch);
    if (lease === null) throw new AppError("invalid_receipt_handle");
    // Handed out before the group's position was reset (seek) or the group deleted.
    if (lease === "stale") throw new AppError("receipt_handle_stale");
    return lease;
  }

  #isExpired(message: StoredMessage): boolean {
    return message.expiresAtMs <= this.#now();
  }
}

function idOf(message: StoredMessage): string {
  return storedMessageId(message.idSeq, message.nonce);
}

function groupKey(group: GroupAddress): string {
  return JSON.stringify([group.namespace.key, group.topic, group.group]);
}

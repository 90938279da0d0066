// The queue's operations in domain terms: publish, receive, receive by ID, acknowledge and change
// visibility. HTTP routes validate input and call these; the Broker port does the storage.
import { AppError, isAppError } from "../errors.js";
import type {
  Broker,
  Deferrer,
  Delivery,
  StoredMessage,
  TraceContext,
  UploadQuota,
} from "./broker.js";
import type { BodyRef, BodyStore, ByteSource, WrittenBody } from "./bodies.js";
import { GroupAcks } from "./delivery/group-acks.js";
import { GroupLeases } from "./delivery/group-leases.js";
import { HandOut } from "./delivery/hand-out.js";
import { MessageCopies } from "./delivery/message-copies.js";
import type { ReceivedMessage } from "./delivery/received-message.js";
import type { DelayedPublishCap } from "./admission/delayed-publish-cap.js";
import { DownloadSlots, type DownloadSlot } from "./download-slots.js";
import { IdLeases } from "./id-leases.js";
import { KeyedLock } from "./keyed-lock.js";
import { LongPolls } from "./long-polls.js";
import { NamespaceCounts } from "./admission/namespace-counts.js";
import { largeBodyBusy, tooManyWaiters } from "./admission/refusals.js";
import {
  duplicateMessageId,
  newNonce,
  parseMessageId,
  storedMessageId,
} from "./identity/message-id.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";
import { decodeReceiptHandle, type Lease } from "./identity/receipt-handle.js";
import { NO_OBSERVER, type QueueObserver } from "./observer.js";
import type { Logger } from "../logger.js";
import { LIMITS, MAX_PULLS_AT_LIMIT } from "./limits.js";
import type { ConsumerSettings } from "./settings/consumer-settings.js";
import type { SecretKeys } from "./identity/secret-keys.js";

export interface PublishInput {
  /** An inline body; a large one is given to `publishStreamed` instead. */
  readonly payload: Uint8Array;
  readonly contentType: string | null;
  readonly retentionSeconds: number;
  readonly delaySeconds: number;
  readonly idempotencyKey: string | null;
  readonly trace: TraceContext | null;
}

export type PublishResult =
  | { readonly deferred: false; readonly messageId: string; readonly duplicate: boolean }
  /** Stored in a neighbour region during a regional outage: delivered once home recovers. */
  | { readonly deferred: true };

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
  readonly broker: Broker;
  readonly keys: SecretKeys;
  readonly now: () => number;
  readonly observer?: QueueObserver;
  /** Regional failover; without it a publish the store cannot take answers 503. */
  readonly deferrer?: Deferrer;
  /** A group's effective settings (push, retry, dead letters), from memory; null: none. */
  readonly settingsOf?: (group: GroupAddress) => ConsumerSettings | null;
  /** Where failures that reach no client are told (dead-lettering that must be retried). */
  readonly log?: Pick<Logger, "warn">;
  /** Waiting receives per namespace on this gateway; past it 429 too_many_waiters (0: none). */
  readonly maxWaitersPerNamespace?: number;
  /** Delayed publishes per second per namespace (429 delayed_publish_rate_limited past it). */
  readonly delayedPublishes?: DelayedPublishCap;
  /** Where bodies above the inline limit are kept; without it they are refused. */
  readonly bodies?: BodyStore;
  /** How many large bodies this gateway moves at once, and who hears of the numbers. */
  readonly largeStreams?: LargeStreams;
}

export interface LargeStreams {
  /** Uploads taken at once; past it 503 large_body_busy before the body is read. */
  readonly maxUploads: number;
  /**
   * Downloads streamed at once: past it receive by ID of a large message is refused (503
   * large_body_busy, nothing leased) and a receive's large body waits for its turn.
   */
  readonly maxDownloads: number;
  /** Bodies moving (uploads and downloads holding a slot), and downloads waiting for a slot. */
  readonly onChange?: (moving: number, waitingDownloads: number) => void;
}

/** How a large body's download gets its slot (see `QueueService.openBody`). */
export interface BodyReading {
  /** A slot reserved for it (receive by ID): used, and released when the download ends. */
  readonly slot?: DownloadSlot | undefined;
  /** Waiting for a slot ends here (the message's lease deadline, on the service's clock). */
  readonly untilMs: number;
  /** The reader went away: a download waiting for its slot leaves the queue. */
  readonly signal?: AbortSignal;
}

/** A body above the inline limit, as it arrives. */
export interface StreamedBody {
  readonly source: ByteSource;
  /** Content-Length, when the client sent one. */
  readonly declaredLength: number | null;
  /** More bytes than this: 413, and nothing is left stored. */
  readonly maxBytes: number;
  /**
   * Awaited once the body is stored, before its message is published: false removes the body
   * and publishes nothing (a batch whose body broke after this part; 400 `invalid_batch`).
   */
  readonly commit?: Promise<boolean>;
}

/** Messages read from a dead-letter topic at a time by redrive. */
const REDRIVE_BATCH = 100;

/** How many pulls one receive may make to skip expired messages before answering. */
const MAX_PULLS_PER_RECEIVE = 4;

const EMPTY = new Uint8Array(0);

const UPLOAD_TOO_LONG =
  "This large body took longer to arrive than its message may wait for: its first chunks would expire before the message. Send it faster (VQS_MIN_UPLOAD_BYTES_PER_SECOND), or a batch's large parts in batches of their own.";

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
  readonly #deferrer: Deferrer | null;
  readonly #idLeases: IdLeases;
  readonly #groupLeases: GroupLeases;
  readonly #settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly #copies: MessageCopies;
  /** Hands pulled deliveries out: a receive's, and the pusher's (Pusher). */
  readonly handOut: HandOut;
  /** Acknowledges through a lease: an acknowledgement's, and the pusher's `autoAck` (PushSettlement). */
  readonly acks: GroupAcks;
  readonly #delayedPublishes: DelayedPublishCap | null;
  readonly #concurrencyTurns = new KeyedLock();
  readonly #longPolls: LongPolls;
  /** Waiting receives per namespace, capped. */
  readonly waiters: NamespaceCounts;
  readonly #bodies: BodyStore | null;
  readonly #maxUploads: number;
  #uploads = 0;
  readonly #downloads: DownloadSlots;
  readonly #onLargeStreams: (moving: number, waitingDownloads: number) => void;

  constructor(deps: QueueServiceDeps) {
    this.#bodies = deps.bodies ?? null;
    this.#maxUploads = deps.largeStreams?.maxUploads ?? Infinity;
    this.#onLargeStreams = deps.largeStreams?.onChange ?? (() => undefined);
    this.#downloads = new DownloadSlots(deps.largeStreams?.maxDownloads ?? Infinity, () =>
      this.#largeStreamsChanged(),
    );
    this.#deferrer = deps.deferrer ?? null;
    this.#broker = deps.broker;
    this.#keys = deps.keys;
    this.#now = deps.now;
    this.#observer = deps.observer ?? NO_OBSERVER;
    this.#idLeases = new IdLeases(deps.broker, deps.now);
    this.#groupLeases = new GroupLeases(deps.broker, this.#idLeases, deps.now);
    this.#longPolls = new LongPolls(deps.broker, deps.now);
    this.#settingsOf = deps.settingsOf ?? (() => null);
    this.#copies = new MessageCopies({ broker: deps.broker, bodies: this.#bodies, now: deps.now });
    this.handOut = new HandOut({
      broker: deps.broker,
      keys: deps.keys,
      now: deps.now,
      observer: this.#observer,
      idLeases: this.#idLeases,
      copies: this.#copies,
      settingsOf: this.#settingsOf,
      log: deps.log ?? null,
    });
    this.acks = new GroupAcks({
      broker: deps.broker,
      idLeases: this.#idLeases,
      now: deps.now,
      observer: this.#observer,
    });
    this.#delayedPublishes = deps.delayedPublishes ?? null;
    this.waiters = new NamespaceCounts(deps.maxWaitersPerNamespace ?? 0);
  }

  /**
   * Stores a message. With an idempotency key, a publish while an earlier message with the key
   * lives is dropped (201 with the duplicate's own ID); once that message has expired, the key
   * stores a new one. The store decides this atomically (see docs/architecture.md).
   */
  async publish(topic: TopicAddress, input: PublishInput): Promise<PublishResult> {
    if (input.delaySeconds > 0) this.#delayedPublishes?.take(topic.namespace.key);
    return this.#publish(topic, input, null);
  }

  /**
   * Publishes a body above the inline limit: the body goes to the body store first, chunk by
   * chunk as it arrives, then the message that points at it (the commit point: a message whose
   * body is partial is never visible). A duplicate of a keyed message removes the body it
   * brought, so a retried keyed publish leaves one body. A message that may or may not have
   * been stored (a timeout) keeps its body; the body store's sweep removes it if no message
   * points at it.
   */
  async publishStreamed(
    topic: TopicAddress,
    input: Omit<PublishInput, "payload">,
    body: StreamedBody,
  ): Promise<PublishResult> {
    const bodies = this.#bodies;
    if (!bodies) throw new AppError("large_body_unsupported");
    if (bodies.unsupportedReason) {
      throw new AppError("large_body_unsupported", { message: bodies.unsupportedReason });
    }
    if (input.delaySeconds > 0) this.#delayedPublishes?.take(topic.namespace.key);
    // Checked before a byte is read: past the cap the client is told to come back.
    if (this.#uploads >= this.#maxUploads) {
      throw largeBodyBusy();
    }
    // The body counts against the storage quotas: a declared length without room is refused
    // before a byte is read, a chunked body as soon as what it brought has none.
    const quota = await this.#broker.uploadQuota(topic, body.declaredLength);
    let ref: WrittenBody;
    this.#uploading(1);
    try {
      ref = await bodies.write(topic, quotaCounted(body.source, quota), {
        retentionSeconds: input.retentionSeconds,
        maxBytes: body.maxBytes,
        declaredLength: body.declaredLength,
        messageLater: body.commit !== undefined,
      });
      quota.end(true);
    } catch (err) {
      quota.end(false);
      throw this.#notDeferred(err);
    } finally {
      this.#uploading(-1);
    }
    if (body.commit && !(await body.commit)) {
      await bodies.remove(topic, ref).catch(() => undefined);
      throw new AppError("invalid_batch");
    }
    // Past this the body's first chunks would expire before its message (a batch read on long
    // after this part): refused before the message, never a 201 for a body that breaks off.
    if (this.#now() > ref.publishByMs) {
      await bodies.remove(topic, ref).catch(() => undefined);
      throw new AppError("request_timeout", { message: UPLOAD_TOO_LONG });
    }
    let result: PublishResult;
    try {
      const claim: BodyRef = { id: ref.id, length: ref.length, sha256: ref.sha256 };
      result = await this.#publish(topic, { ...input, payload: EMPTY }, claim);
    } catch (err) {
      throw this.#notDeferred(err);
    }
    if (!result.deferred && result.duplicate) {
      await bodies.remove(topic, ref).catch(() => undefined);
    } else {
      await bodies.commit(topic, ref, input.retentionSeconds).catch(() => undefined);
    }
    return result;
  }

  /** A large body stays in its region's store: while that store is down, 503, not 202. */
  #notDeferred(err: unknown): unknown {
    if (this.#deferrer && isAppError(err) && err.code === "storage_unavailable") {
      return new AppError("large_body_not_deferred", { cause: err, retryAfterSeconds: 5 });
    }
    return err;
  }

  /**
   * The bytes of a large body, verified as they are read (a failure throws mid-way). The read
   * holds a download slot: the one `reading` brings, or one it waits for in turn before the
   * first chunk is asked for (so a waiting download holds no chunk). A download that gets none
   * by `reading.untilMs` (the lease it was handed out with has ended) fails with
   * large_body_busy, and one whose reader went away fails at once; neither changes the lease.
   */
  openBody(topic: TopicAddress, ref: BodyRef, reading: BodyReading): AsyncIterable<Uint8Array> {
    const bodies = this.#bodies;
    if (!bodies) {
      reading.slot?.release();
      throw new AppError("storage_unavailable");
    }
    return this.#download(() => bodies.read(topic, ref), reading);
  }

  async *#download(
    read: () => AsyncIterable<Uint8Array>,
    reading: BodyReading,
  ): AsyncGenerator<Uint8Array> {
    let slot = reading.slot ?? null;
    try {
      slot ??= await this.#downloads.take(
        reading.untilMs - this.#now(),
        reading.signal ?? null,
        true,
      );
      if (slot === null || reading.signal?.aborted) {
        throw largeBodyBusy(
          reading.signal?.aborted
            ? "The reader went away while its large body waited for a download slot."
            : "No download slot (VQS_MAX_LARGE_DOWNLOADS) came free before the message's lease ended.",
        );
      }
      yield* read();
    } finally {
      slot?.release();
    }
  }

  #uploading(n: number): void {
    this.#uploads += n;
    this.#largeStreamsChanged();
  }

  #largeStreamsChanged(): void {
    this.#onLargeStreams(this.#uploads + this.#downloads.used, this.#downloads.waiting);
  }

  async #publish(
    topic: TopicAddress,
    input: PublishInput,
    body: BodyRef | null,
  ): Promise<PublishResult> {
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
    };
    let outcome;
    try {
      outcome = await this.#broker.publish(topic, message);
    } catch (err) {
      // The home store cannot take it: a neighbour region keeps it until home recovers.
      if (body || !this.#deferrer || !isAppError(err) || err.code !== "storage_unavailable") {
        throw err;
      }
      await this.#deferrer.defer(topic, message);
      this.#observer.deferred();
      return { deferred: true };
    }
    // Waiting receives on this gateway that found no topic look again now (it may be new).
    this.#longPolls.published(topic);
    if (outcome.kind === "stored") {
      this.#observer.published(false);
      return { deferred: false, messageId: storedMessageId(outcome.seq, nonce), duplicate: false };
    }
    this.#observer.published(true);
    return {
      deferred: false,
      messageId: duplicateMessageId(this.#keys.duplicateId, topic, outcome.originalSeq),
      duplicate: true,
    };
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
    if (!this.waiters.take(ns)) throw tooManyWaiters();
    try {
      const untilMs = this.#now() + waitMs;
      for (;;) {
        const d = await this.#longPolls.wait(group, untilMs, options.signal ?? null);
        if (d === null) return [];
        const got = await this.#receiveNow(group, options, d);
        if (got.length > 0) return got;
      }
    } finally {
      this.waiters.release(ns);
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
        live.push(...(await this.handOut.admit(group, batch, deadlineMs)));
        if (!woken && batch.length < asked) break; // the group has nothing more right now
      }
      pulled();
      await this.handOut.lease(group, live, leaseMs);
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
    return live.map((d) => this.handOut.handOut(group, d, deadlineMs));
  }

  async acknowledge(group: GroupAddress, receiptHandle: string): Promise<void> {
    await this.acks.acknowledge(group, this.#decodeHandle(group, receiptHandle), undefined, true);
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
      await this.acks.assertCurrent(group, lease);
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
    const slot = await this.#downloads.take(RECEIVE_BY_ID_SLOT_WAIT_MS, options.signal ?? null);
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
    return this.handOut.received(group, found.message, lease);
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

/** `source`, each piece counted against the quota before it is passed on (over it: throws). */
async function* quotaCounted(source: ByteSource, quota: UploadQuota): AsyncGenerator<Uint8Array> {
  for await (const piece of source) {
    quota.add(piece.byteLength);
    yield piece;
  }
}

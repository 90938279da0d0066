// Bodies above the inline limit: a publish streams its body into the body store before its
// message is stored (the commit point), and a download reads it back verified, each holding one
// of the gateway's slots for large bodies in motion (uploads capped, downloads capped and queued).
import { AppError, isAppError } from "../../errors.js";
import { largeBodyBusy } from "../admission/refusals.js";
import type { BodyRef, ByteSource, WrittenBody } from "../bodies.js";
import type { UploadQuota } from "../broker.js";
import { DownloadSlots, type DownloadSlot } from "../download-slots.js";
import type { TopicAddress } from "../namespace.js";
import type { PublishInput, Publishing, PublishResult } from "./publish.js";
import type { QueueContext } from "./queue-context.js";

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

/** How a large body's download gets its slot (see `LargeBodies.openBody`). */
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

const EMPTY = new Uint8Array(0);

const UPLOAD_TOO_LONG =
  "This large body took longer to arrive than its message may wait for: its first chunks would expire before the message. Send it faster (VQS_MIN_UPLOAD_BYTES_PER_SECOND), or a batch's large parts in batches of their own.";

export class LargeBodies {
  readonly #ctx: QueueContext;
  readonly #publishing: Publishing;
  readonly #maxUploads: number;
  #uploads = 0;
  readonly #downloads: DownloadSlots;
  readonly #onLargeStreams: (moving: number, waitingDownloads: number) => void;

  /** `publishing`: how the message of a stored body is stored (as an inline one is). */
  constructor(ctx: QueueContext, publishing: Publishing, largeStreams?: LargeStreams) {
    this.#ctx = ctx;
    this.#publishing = publishing;
    this.#maxUploads = largeStreams?.maxUploads ?? Infinity;
    this.#onLargeStreams = largeStreams?.onChange ?? (() => undefined);
    this.#downloads = new DownloadSlots(largeStreams?.maxDownloads ?? Infinity, () =>
      this.#largeStreamsChanged(),
    );
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
    const bodies = this.#ctx.bodies;
    if (!bodies) throw new AppError("large_body_unsupported");
    if (bodies.unsupportedReason) {
      throw new AppError("large_body_unsupported", { message: bodies.unsupportedReason });
    }
    this.#publishing.takeDelayedTurn(topic, input.delaySeconds);
    // Checked before a byte is read: past the cap the client is told to come back.
    if (this.#uploads >= this.#maxUploads) {
      throw largeBodyBusy();
    }
    // The body counts against the storage quotas: a declared length without room is refused
    // before a byte is read, a chunked body as soon as what it brought has none.
    const quota = await this.#ctx.broker.uploadQuota(topic, body.declaredLength);
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
    if (this.#ctx.now() > ref.publishByMs) {
      await bodies.remove(topic, ref).catch(() => undefined);
      throw new AppError("request_timeout", { message: UPLOAD_TOO_LONG });
    }
    let result: PublishResult;
    try {
      const claim: BodyRef = { id: ref.id, length: ref.length, sha256: ref.sha256 };
      result = await this.#publishing.store(topic, { ...input, payload: EMPTY }, claim);
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
    if (this.#publishing.defers && isAppError(err) && err.code === "storage_unavailable") {
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
    const bodies = this.#ctx.bodies;
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
        reading.untilMs - this.#ctx.now(),
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

  /**
   * A download slot reserved before anything is leased (receive by ID): null when none came
   * free within `waitMs`, or the reader went away.
   */
  takeDownloadSlot(waitMs: number, signal: AbortSignal | null): Promise<DownloadSlot | null> {
    return this.#downloads.take(waitMs, signal);
  }

  #uploading(n: number): void {
    this.#uploads += n;
    this.#largeStreamsChanged();
  }

  #largeStreamsChanged(): void {
    this.#onLargeStreams(this.#uploads + this.#downloads.used, this.#downloads.waiting);
  }
}

/** `source`, each piece counted against the quota before it is passed on (over it: throws). */
async function* quotaCounted(source: ByteSource, quota: UploadQuota): AsyncGenerator<Uint8Array> {
  for await (const piece of source) {
    quota.add(piece.byteLength);
    yield piece;
  }
}

// The large-body port: bodies above the inline limit are kept apart from their message (a
// claim check) and streamed in and out in bounded pieces. src/nats/bodies/ implements it.
import type { TopicAddress } from "./namespace.js";

/** What a message carries in place of a large body: enough to find and verify it. */
export interface BodyRef {
  /** Random, 32 hex characters; names the body inside its topic. */
  readonly id: string;
  readonly length: number;
  /** SHA-256 of the whole body, hex. */
  readonly sha256: string;
}

/** Bytes as they arrive (a request stream), or already in memory (a batch part). */
export type ByteSource = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export interface BodyWriteOptions {
  /** The message's retention: the body lives as long (plus a margin for reads under way). */
  readonly retentionSeconds: number;
  /** More bytes than this: 413 `payload_too_large`, and nothing is left stored. */
  readonly maxBytes: number;
  /** The length the client declared (Content-Length), when it did. */
  readonly declaredLength: number | null;
  /**
   * Its message waits for more than this body (a batch part waits for the rest of the batch):
   * the body is not an orphan before its publish-by time, however long ago its last chunk came.
   */
  readonly messageLater?: boolean;
}

/** A body just stored, and by when its message must be stored for the body to outlive it. */
export interface WrittenBody extends BodyRef {
  /**
   * The message's publish must begin by then (ms, the store's clock): every chunk lives the
   * retention plus the margin past that moment (and the publish's own time), however long the
   * upload took. Later, the publish is refused (408 request_timeout) and the body removed.
   */
  readonly publishByMs: number;
}

export interface BodyStore {
  /** Why large bodies cannot be stored here (a server too old), or null when they can. */
  readonly unsupportedReason: string | null;
  /**
   * Stores a body read from `source`, chunk by chunk with a bounded window in flight. On any
   * failure (the source failing, the limit passed, the store refusing, an upload outlasting the
   * longest the store gives one) what was written is removed before the error is thrown.
   */
  write(topic: TopicAddress, source: ByteSource, o: BodyWriteOptions): Promise<WrittenBody>;
  /**
   * The body's bytes, read on demand (nothing is read ahead of the consumer but one window),
   * checked against its length and SHA-256: a missing chunk or a mismatch throws
   * `BodyCorruptError` before the last bytes are handed over.
   */
  read(topic: TopicAddress, ref: BodyRef): AsyncIterable<Uint8Array>;
  /**
   * Up to the first `bytes` of the body (a preview), from its first chunk alone: one chunk read,
   * nothing read ahead, not checked against the SHA-256 (the rest is never read). Empty when the
   * body is missing.
   */
  head(topic: TopicAddress, ref: BodyRef, bytes: number): Promise<Uint8Array>;
  /**
   * Records that a stored message points at the body (after its PubAck), so the orphan sweep
   * leaves it without looking for the message. Best effort: the sweep finds the message anyway.
   */
  commit(topic: TopicAddress, ref: BodyRef, retentionSeconds: number): Promise<void>;
  /** Removes a body (gone already: nothing happens). */
  remove(topic: TopicAddress, ref: BodyRef): Promise<void>;
  /** A copy of a body for another message (a dead-letter copy, a redriven message). */
  copy(
    from: TopicAddress,
    ref: BodyRef,
    to: TopicAddress,
    retentionSeconds: number,
  ): Promise<BodyRef>;
}

/** `store.copy` as every store does it: the body read back, checked, and written anew under `to`. */
export function copyBody(
  store: BodyStore,
  from: TopicAddress,
  ref: BodyRef,
  to: TopicAddress,
  retentionSeconds: number,
): Promise<WrittenBody> {
  return store.write(to, store.read(from, ref), {
    retentionSeconds,
    maxBytes: ref.length,
    declaredLength: ref.length,
  });
}

/** A stored body that does not read back as written: the reader must see a failure. */
export class BodyCorruptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BodyCorruptError";
  }
}

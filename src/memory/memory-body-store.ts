// The BodyStore port (src/queue/bodies.ts) in memory, on an injected clock: large bodies kept as
// chunks per topic, living as long as their message's retention (plus the same margin as the
// JetStream store) past the latest their message may be published, for fast tests. test/contract/ runs one suite against both stores.
import { createHash, randomBytes } from "node:crypto";
import { AppError } from "../errors.js";
import {
  BodyCorruptError,
  copyBody,
  type BodyRef,
  type BodyStore,
  type BodyWriteOptions,
  type ByteSource,
  type WrittenBody,
} from "../queue/bodies.js";
import type { TopicAddress } from "../queue/namespace.js";

export interface MemoryBodyStoreOptions {
  readonly now: () => number;
  /** Bytes per stored chunk (a body of more is several chunks, as in the JetStream store). */
  readonly chunkBytes?: number;
  /** A body outlives its message's retention by this much (reads under way still find it). */
  readonly ttlMarginSeconds?: number;
  /**
   * The longest from a body's write to its message's publish (default an hour, the JetStream
   * store's most): the body lives its retention and the margin past that moment.
   */
  readonly uploadBoundSeconds?: number;
  /** Non-null: every write is refused with this reason (a store on a server too old). */
  readonly unsupportedReason?: string | null;
}

interface StoredBody {
  readonly chunks: Uint8Array[];
  /** When its chunks expire (ms on the injected clock). */
  readonly expiresAt: number;
  committed: boolean;
}

export class MemoryBodyStore implements BodyStore {
  readonly unsupportedReason: string | null;
  readonly #now: () => number;
  readonly #chunkBytes: number;
  readonly #marginMs: number;
  readonly #boundMs: number;
  /** Bodies by topic key, then by body ID. */
  readonly #topics = new Map<string, Map<string, StoredBody>>();

  constructor(o: MemoryBodyStoreOptions) {
    this.#now = o.now;
    this.#chunkBytes = o.chunkBytes ?? 256 * 1024;
    this.#marginMs = (o.ttlMarginSeconds ?? 300) * 1000;
    this.#boundMs = (o.uploadBoundSeconds ?? 3600) * 1000;
    this.unsupportedReason = o.unsupportedReason ?? null;
  }

  async write(topic: TopicAddress, source: ByteSource, o: BodyWriteOptions): Promise<WrittenBody> {
    if (this.unsupportedReason) {
      throw new AppError("large_body_unsupported", { message: this.unsupportedReason });
    }
    const id = randomBytes(16).toString("hex");
    const publishByMs = this.#now() + this.#boundMs;
    const body: StoredBody = {
      chunks: [],
      expiresAt: publishByMs + o.retentionSeconds * 1000 + this.#marginMs,
      committed: false,
    };
    // Stored as the bytes arrive, so a failure part-way has something to remove (as in JetStream).
    this.#bodies(topic, true).set(id, body);
    const hash = createHash("sha256");
    let length = 0;
    let chunk = new Uint8Array(this.#chunkBytes);
    let fill = 0;
    try {
      for await (const piece of source) {
        length += piece.length;
        if (length > o.maxBytes) throw new AppError("payload_too_large");
        hash.update(piece);
        for (let at = 0; at < piece.length;) {
          const n = Math.min(this.#chunkBytes - fill, piece.length - at);
          chunk.set(piece.subarray(at, at + n), fill);
          fill += n;
          at += n;
          if (fill === this.#chunkBytes) {
            body.chunks.push(chunk);
            chunk = new Uint8Array(this.#chunkBytes);
            fill = 0;
          }
        }
      }
      if (fill > 0 || body.chunks.length === 0) body.chunks.push(chunk.slice(0, fill));
    } catch (err) {
      this.#forget(topic, id);
      throw err;
    }
    return { id, length, sha256: hash.digest("hex"), publishByMs };
  }

  async head(topic: TopicAddress, ref: BodyRef, bytes: number): Promise<Uint8Array> {
    await Promise.resolve();
    const first = this.#live(topic, ref.id)?.chunks[0];
    return first ? first.slice(0, bytes) : new Uint8Array(0);
  }

  async *read(topic: TopicAddress, ref: BodyRef): AsyncIterable<Uint8Array> {
    await Promise.resolve(); // nothing is looked at before the reader asks, as in JetStream
    const body = this.#live(topic, ref.id);
    const name = `body ${ref.id} of ${topic.topic}`;
    if (!body) throw new BodyCorruptError(`chunk 0 of ${name} is missing`);
    const hash = createHash("sha256");
    let total = 0;
    // The last chunk is held back until the length and SHA-256 check out: a reader never gets
    // a whole body that is wrong.
    let held: Uint8Array | null = null;
    for (const data of body.chunks) {
      total += data.length;
      if (total > ref.length) throw new BodyCorruptError(`${name} is longer than recorded`);
      hash.update(data);
      if (held) yield held;
      held = data;
    }
    if (total < ref.length) throw new BodyCorruptError(`chunk of ${name} is missing`);
    if (hash.digest("hex") !== ref.sha256) {
      throw new BodyCorruptError(`${name} does not match its SHA-256`);
    }
    if (held && held.length > 0) yield held;
  }

  /** The mark only: the chunks keep the expiry they were written with, as in JetStream. */
  commit(topic: TopicAddress, ref: BodyRef, _retentionSeconds?: number): Promise<void> {
    const body = this.#live(topic, ref.id);
    if (body) body.committed = true;
    return Promise.resolve();
  }

  remove(topic: TopicAddress, ref: BodyRef): Promise<void> {
    this.#forget(topic, ref.id);
    return Promise.resolve();
  }

  copy(
    from: TopicAddress,
    ref: BodyRef,
    to: TopicAddress,
    retentionSeconds: number,
  ): Promise<WrittenBody> {
    return copyBody(this, from, ref, to, retentionSeconds);
  }

  /** Chunks stored for the topic's bodies, expired ones left out (what a test counts). */
  storedChunks(topic: TopicAddress): number {
    let n = 0;
    for (const id of this.#bodies(topic, false)?.keys() ?? []) {
      n += this.#live(topic, id)?.chunks.length ?? 0;
    }
    return n;
  }

  /** Whether a message was recorded as pointing at the body. */
  isCommitted(topic: TopicAddress, ref: BodyRef): boolean {
    return this.#live(topic, ref.id)?.committed ?? false;
  }

  #bodies(topic: TopicAddress, create: true): Map<string, StoredBody>;
  #bodies(topic: TopicAddress, create: false): Map<string, StoredBody> | undefined;
  #bodies(topic: TopicAddress, create: boolean): Map<string, StoredBody> | undefined {
    const key = topicKey(topic);
    let bodies = this.#topics.get(key);
    if (!bodies && create) this.#topics.set(key, (bodies = new Map<string, StoredBody>()));
    return bodies;
  }

  /** The body, unless it expired (then it is dropped, as a chunk's TTL drops it). */
  #live(topic: TopicAddress, id: string): StoredBody | undefined {
    const body = this.#bodies(topic, false)?.get(id);
    if (body && body.expiresAt <= this.#now()) {
      this.#forget(topic, id);
      return undefined;
    }
    return body;
  }

  #forget(topic: TopicAddress, id: string): void {
    const key = topicKey(topic);
    const bodies = this.#topics.get(key);
    bodies?.delete(id);
    if (bodies?.size === 0) this.#topics.delete(key);
  }
}

const topicKey = (topic: TopicAddress) => `${topic.namespace.key}\n${topic.topic}`;

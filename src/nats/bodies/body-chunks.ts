// Writing and reading one large body as a run of chunk messages on its own subject of the body
// stream: a bounded window of publishes in flight going in, one batch Direct Get at a time
// coming out, the SHA-256 checked as the bytes pass.
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { createHash } from "node:crypto";
import { AppError } from "../../errors.js";
import { BodyCorruptError, type ByteSource } from "../../queue/bodies.js";
import type { Requests } from "../core/requests.js";
import { isNothingFound } from "../core/errors.js";
import { BODY_STREAM } from "../core/naming.js";

/** The chunk's place in its body (0, 1, ...), so a gap or a reordering is seen. */
export const CHUNK_HEADER = "Vqs-Chunk";
/** On chunk 0 and the commit marker: the namespace the body belongs to (its usage's label). */
export const NAMESPACE_HEADER = "Vqs-Body-Namespace";
/**
 * The commit marker, after the last chunk: a message points at this body (its length). The
 * orphan sweep leaves committed bodies alone without looking for their message.
 */
export const COMMIT_HEADER = "Vqs-Body-Commit";

export interface ChunkWriteOptions {
  readonly requests: Requests;
  readonly subject: string;
  readonly chunkBytes: number;
  /** Chunk publishes in flight at most. */
  readonly window: number;
  readonly ttlSeconds: number;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly namespaceLabel: string;
  /** Told of every piece taken from the source (byte counts, the ingest budget). */
  readonly onBytes?: (n: number) => Promise<void> | void;
}

/**
 * Lets the event loop take in I/O (other requests, NATS replies) before the next piece. A request
 * whose pieces are already buffered is read by `for await` in microtasks alone, so without this
 * an upload hashed, copied and published megabytes in one turn while small publishes waited: in
 * two paired A/Bs (bench:large --ab-env) a yield per piece took small-publish p99 under four
 * uploads to 0.30x and 0.57x, at the same ingest rate (docs/performance.md).
 */
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Stores the source's bytes as chunks; returns the length and SHA-256. On any failure the caller
 * removes the subject (some chunks may be stored).
 */
export async function writeChunks(
  source: ByteSource,
  o: ChunkWriteOptions,
): Promise<{ length: number; sha256: string }> {
  const hash = createHash("sha256");
  // A chunk's buffer is used again once its publish is acknowledged (its bytes were written
  // to the socket before the server could answer): a window of buffers per body, not 100 MB of
  // garbage for the collector.
  const free: Buffer[] = [];
  const inFlight: { ack: Promise<unknown>; buffer: Buffer }[] = [];
  let total = 0;
  let index = 0;
  let chunk: Buffer = Buffer.allocUnsafe(o.chunkBytes);
  let fill = 0;
  const send = async (data: Buffer, buffer: Buffer): Promise<void> => {
    const h = headers();
    h.set("Nats-Expected-Stream", BODY_STREAM);
    h.set("Nats-TTL", String(o.ttlSeconds));
    h.set(CHUNK_HEADER, String(index));
    if (index === 0) h.set(NAMESPACE_HEADER, o.namespaceLabel);
    index++;
    const ack = o.requests.publish(o.subject, data, o.timeoutMs, h);
    ack.catch(() => undefined); // awaited below, in order
    inFlight.push({ ack, buffer });
    if (inFlight.length >= o.window) {
      const oldest = inFlight.shift()!;
      await oldest.ack;
      free.push(oldest.buffer);
    }
  };
  try {
    for await (const piece of source) {
      total += piece.length;
      if (total > o.maxBytes) throw new AppError("payload_too_large");
      hash.update(piece);
      await o.onBytes?.(piece.length);
      await yieldToIo();
      let at = 0;
      while (at < piece.length) {
        const n = Math.min(o.chunkBytes - fill, piece.length - at);
        chunk.set(piece.subarray(at, at + n), fill);
        fill += n;
        at += n;
        if (fill === o.chunkBytes) {
          await send(chunk, chunk);
          chunk = free.pop() ?? Buffer.allocUnsafe(o.chunkBytes);
          fill = 0;
        }
      }
    }
    if (fill > 0 || index === 0) await send(chunk.subarray(0, fill), chunk);
    await Promise.all(inFlight.map((f) => f.ack));
  } catch (err) {
    await Promise.allSettled(inFlight.map((f) => f.ack));
    throw err;
  }
  return { length: total, sha256: hash.digest("hex") };
}

export interface ChunkReadOptions {
  readonly jsm: JetStreamManager;
  readonly subject: string;
  readonly length: number;
  readonly sha256: string;
  /** Chunks held in memory at most (asked for half at a time, the next half while one is read). */
  readonly window: number;
  /** Told of every chunk handed over. */
  readonly onBytes?: (n: number) => void;
}

/** How often a chunk that is not there is asked for again (a replica catching up). */
const MISSING_RETRIES = 2;
const MISSING_RETRY_MS = 250;

/** A stored message of the body's subject: a chunk, or the commit marker. */
type BodyMessage = StoredMsg;

/**
 * One batch Direct Get of half a window of messages of the subject from `seq` on, whole (two
 * are held at most: a window).
 */
async function fetchWindow(o: ChunkReadOptions, seq: number): Promise<BodyMessage[]> {
  const batch = await o.jsm.direct.getBatch(BODY_STREAM, {
    seq,
    next_by_subj: o.subject,
    batch: Math.max(1, Math.ceil(o.window / 2)),
  });
  const got: BodyMessage[] = [];
  try {
    for await (const m of batch) got.push(m);
  } catch (err) {
    // The batch found nothing more (a 404 status): a chunk missing is looked at by the caller.
    if (!isNothingFound(err)) throw err;
  }
  return got;
}

/**
 * The body's bytes in order, half a window of chunks at a time, only as fast as the consumer
 * takes them. The next half is asked for while this one is handed over (so NATS's answer and
 * the client's reading overlap), never more: at most a window is held. The last chunk is held
 * back until the length and SHA-256 check out, so a reader never gets a whole body that is
 * wrong: it gets an error instead.
 */
export async function* readChunks(o: ChunkReadOptions): AsyncGenerator<Uint8Array> {
  const hash = createHash("sha256");
  let index = 0;
  let total = 0;
  let held: Uint8Array | null = null;
  let misses = 0;
  let next: Promise<BodyMessage[]> | null = fetchWindow(o, 1);
  let from = 1;
  while (total < o.length || index === 0) {
    const batch: BodyMessage[] = next ? await next : [];
    next = null;
    const chunks = batch.filter((m) => !m.header.has(COMMIT_HEADER));
    if (chunks.length === 0) {
      // Direct Get may be answered by a replica that has not caught up yet: ask again a little
      // later, then give up (the body was removed or never completed).
      if (++misses > MISSING_RETRIES) {
        throw new BodyCorruptError(`chunk ${index} of ${o.subject} is missing`);
      }
      await new Promise((r) => setTimeout(r, MISSING_RETRY_MS));
      next = fetchWindow(o, from);
      continue;
    }
    misses = 0;
    from = batch[batch.length - 1]!.seq + 1;
    const bytes = chunks.reduce((n, m) => n + m.data.length, 0);
    if (total + bytes < o.length) {
      next = fetchWindow(o, from);
      next.catch(() => undefined); // awaited on the next turn, unless the reader left
    }
    for (const m of chunks) {
      if (Number(m.header.get(CHUNK_HEADER)) !== index) {
        throw new BodyCorruptError(`chunk ${index} of ${o.subject} is missing`);
      }
      index++;
      total += m.data.length;
      if (total > o.length) throw new BodyCorruptError(`${o.subject} is longer than recorded`);
      hash.update(m.data);
      if (held) {
        o.onBytes?.(held.length);
        yield held;
      }
      held = m.data;
    }
  }
  if (hash.digest("hex") !== o.sha256) {
    throw new BodyCorruptError(`${o.subject} does not match its SHA-256`);
  }
  if (held && held.length > 0) {
    o.onBytes?.(held.length);
    yield held;
  }
}

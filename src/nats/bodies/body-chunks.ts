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
/**
 * On chunk 0 of a body whose message waits for more than the body (a batch part): its
 * publish-by time (ms). The orphan sweep leaves the body until then.
 */
export const PUBLISH_BY_HEADER = "Vqs-Body-Publish-By";

export interface ChunkWriteOptions {
  readonly requests: Requests;
  readonly subject: string;
  readonly chunkBytes: number;
  /** Chunk publishes in flight at most. */
  readonly window: number;
  /** The message's retention plus the margin: each chunk lives that long past the publish-by time. */
  readonly ttlSeconds: number;
  /**
   * The longest the upload may last, from its first chunk to its message's publish: that
   * publish-by time is what every chunk's TTL counts from, not its own write. Passed, the write
   * is refused (408 request_timeout).
   */
  readonly boundMs: number;
  /** The store's clock (the server's time, estimated): what chunks' timestamps are on. */
  readonly now: () => number;
  /** Chunk 0 says the publish-by time (`PUBLISH_BY_HEADER`): the message comes later. */
  readonly messageLater?: boolean;
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
 * two paired A/Bs a yield per piece took small-publish p99 under four uploads to 0.30x and
 * 0.57x, at the same ingest rate (docs/performance.md, "Large bodies").
 */
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

const UPLOAD_TOO_LONG =
  "This large body is arriving slower than the service's minimum upload rate allows for its size (VQS_MIN_UPLOAD_BYTES_PER_SECOND), or it has taken longer than an hour.";

/**
 * Stores the source's bytes as chunks; returns the length, the SHA-256 and the time by which the
 * message must be published (every chunk lives `ttlSeconds` past it, plus a publish's timeout).
 * On any failure the caller removes the subject (some chunks may be stored).
 */
export async function writeChunks(
  source: ByteSource,
  o: ChunkWriteOptions,
): Promise<{ length: number; sha256: string; publishByMs: number }> {
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
  let publishByMs = 0;
  const send = async (data: Buffer, buffer: Buffer): Promise<void> => {
    const at = o.now();
    if (index === 0) publishByMs = at + o.boundMs;
    else if (at > publishByMs) throw new AppError("request_timeout", { message: UPLOAD_TOO_LONG });
    // Every chunk expires no sooner than a message published by then (its publish taking up to
    // the timeout) with its retention and the margin: a chunk written early lives longer.
    const ttl = o.ttlSeconds + Math.ceil((publishByMs + o.timeoutMs - at) / 1000);
    const h = headers();
    h.set("Nats-Expected-Stream", BODY_STREAM);
    h.set("Nats-TTL", String(ttl));
    h.set(CHUNK_HEADER, String(index));
    if (index === 0) h.set(NAMESPACE_HEADER, o.namespaceLabel);
    if (index === 0 && o.messageLater) h.set(PUBLISH_BY_HEADER, String(publishByMs));
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
  if (o.now() > publishByMs) throw new AppError("request_timeout", { message: UPLOAD_TOO_LONG });
  return { length: total, sha256: hash.digest("hex"), publishByMs };
}

export interface ChunkReadOptions {
  readonly jsm: JetStreamManager;
  readonly subject: string;
  readonly length: number;
  readonly sha256: string;
  /**
   * Chunks asked for or held at most, not yet handed over (asked for half a window at a time,
   * the next half while one is handed over).
   */
  readonly window: number;
  /** Told of every chunk handed over. */
  readonly onBytes?: (n: number) => void;
  /** Told of every change to the chunks asked for or held, not yet handed over. */
  readonly onReadAhead?: (chunks: number) => void;
}

/** How often a chunk that is not there is asked for again (a replica catching up). */
const MISSING_RETRIES = 2;
const MISSING_RETRY_MS = 250;

/** A stored message of the body's subject: a chunk, or the commit marker. */
type BodyMessage = StoredMsg;

/** One batch Direct Get of up to `batch` messages of the subject from `seq` on, whole. */
async function fetchBatch(
  o: Pick<ChunkReadOptions, "jsm" | "subject">,
  seq: number,
  batch: number,
): Promise<BodyMessage[]> {
  const it = await o.jsm.direct.getBatch(BODY_STREAM, { seq, next_by_subj: o.subject, batch });
  const got: BodyMessage[] = [];
  try {
    for await (const m of it) got.push(m);
  } catch (err) {
    // The batch found nothing more (a 404 status): a chunk missing is looked at by the caller.
    if (!isNothingFound(err)) throw err;
  }
  return got;
}

/**
 * Up to the first `bytes` of the body on `subject`: its chunk 0 alone (one Direct Get), sliced
 * (a copy, so the chunk's buffer is not kept). Empty when there is no chunk 0.
 */
export async function readHead(
  jsm: JetStreamManager,
  subject: string,
  bytes: number,
): Promise<Uint8Array> {
  const [first] = await fetchBatch({ jsm, subject }, 1, 1);
  if (!first || first.header.has(COMMIT_HEADER) || Number(first.header.get(CHUNK_HEADER)) !== 0) {
    return new Uint8Array(0);
  }
  return first.data.slice(0, bytes);
}

/**
 * The body's bytes in order, only as fast as the consumer takes them. At most `window` chunks
 * are asked for or held and not yet handed over: half a window is asked for at a time, the next
 * half as soon as there is room for it (so NATS's answer and the client's reading overlap), and
 * a consumer that stops taking stops the reads from NATS. The last chunk is held back until the
 * length and SHA-256 check out, so a reader never gets a whole body that is wrong: it gets an
 * error instead.
 */
export async function* readChunks(o: ChunkReadOptions): AsyncGenerator<Uint8Array> {
  const window = Math.max(1, o.window);
  const batchSize = Math.max(1, Math.ceil(window / 2));
  const hash = createHash("sha256");
  /** Chunks arrived (checked and hashed), not yet handed over. */
  const ready: Uint8Array[] = [];
  let index = 0;
  let total = 0;
  let misses = 0;
  let from = 1;
  let asked: { batch: Promise<BodyMessage[]>; size: number } | null = null;
  const readAhead = (n: number) => n !== 0 && o.onReadAhead?.(n);
  const ask = () => {
    const batch = fetchBatch(o, from, batchSize);
    batch.catch(() => undefined); // awaited below, unless the reader left
    asked = { batch, size: batchSize };
    readAhead(batchSize);
  };
  /** More chunks are still to come from NATS (a zero-length body is one empty chunk). */
  const more = () => total < o.length || index === 0;
  try {
    for (;;) {
      if (!asked && more() && ready.length + batchSize <= window) ask();
      // Every chunk but the body's last may go as soon as it is here.
      if (ready.length > 1 || (ready.length === 1 && more())) {
        const piece = ready.shift()!;
        readAhead(-1);
        o.onBytes?.(piece.length);
        yield piece;
        continue;
      }
      if (!more()) break;
      if (!asked) ask();
      const { batch: pending, size } = asked!;
      const batch = await pending;
      asked = null;
      const chunks = batch.filter((m) => !m.header.has(COMMIT_HEADER));
      readAhead(chunks.length - size);
      if (chunks.length === 0) {
        // Direct Get may be answered by a replica that has not caught up yet: ask again a
        // little later, then give up (the body was removed or never completed).
        if (++misses > MISSING_RETRIES) {
          throw new BodyCorruptError(`chunk ${index} of ${o.subject} is missing`);
        }
        await new Promise((r) => setTimeout(r, MISSING_RETRY_MS));
        continue;
      }
      misses = 0;
      from = batch[batch.length - 1]!.seq + 1;
      for (const m of chunks) {
        if (Number(m.header.get(CHUNK_HEADER)) !== index) {
          throw new BodyCorruptError(`chunk ${index} of ${o.subject} is missing`);
        }
        index++;
        total += m.data.length;
        if (total > o.length) throw new BodyCorruptError(`${o.subject} is longer than recorded`);
        hash.update(m.data);
        ready.push(m.data);
      }
    }
    if (hash.digest("hex") !== o.sha256) {
      throw new BodyCorruptError(`${o.subject} does not match its SHA-256`);
    }
    const last = ready.shift();
    readAhead(-(last ? 1 : 0));
    if (last && last.length > 0) {
      o.onBytes?.(last.length);
      yield last;
    }
  } finally {
    // A reader that left (or a failure): what was asked for or held is no longer read ahead.
    readAhead(-(ready.length + (asked ? (asked as { size: number }).size : 0)));
  }
}

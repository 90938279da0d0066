// Batch publish (the client's experimental_sendBatch): POST /api/v3/topic/{topic}/batch with a
// multipart/mixed body of 1 to 100 messages, each part with its own Content-Type and Vqs-*
// headers. Answers {results: [...]}: one entry per part, in order; a bad part fails alone. Each
// part counts as a request in the tenant's rate limit: the parts the budget has no room for fail
// alone with 429 rate_limited (retryable), the first ones stored. The body streams: a part above
// the inline limit goes to the body store as it arrives (like a large single publish), the
// inline parts are held (maxBatchBytes per batch, and a share of the heap for all batches
// of the gateway together: 503 batch_busy past it), and no message is published before the body
// has been read whole: a batch cut off stores nothing. A large part refused before its end (too
// large, rate-limited, no room) is not read on: the batch is refused whole with the part's error,
// and the connection closed (with a lingering close), so no refusal reads a body without bound.
import type { BatchAnswer, BatchResult } from "../../../api/messages.js";
import type { FastifyInstance } from "fastify";
import type { Readable } from "node:stream";
import { AppError, isAppError } from "../../../errors.js";
import { LIMITS } from "../../../queue/limits.js";
import { BatchParts, boundaryOf, type BatchEvent } from "../../encoding/batch-parts.js";
import { abortable, type BodyLimits } from "../../encoding/publish-body.js";
import type { PartsLimit } from "../../plugins/rate-limit.js";
import { refuseUnread } from "../../plugins/linger-close.js";
import { uploadSignal } from "../../plugins/upload-watchdog.js";
import { ByteBudget } from "../../../queue/admission/in-flight/byte-budget.js";
import { batchBusy, rateLimited } from "../../../queue/admission/refusals.js";
import { heapShare } from "../../heap-share.js";
import type { TopicAddress } from "../../../queue/namespace.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { PUBLISH_BATCH } from "../../openapi/message-routes.js";
import { topicOf } from "../../params.js";
import type { TraceContext } from "../../../queue/broker.js";
import { publishInput, traceContext } from "./publish-input.js";

const EMPTY = Buffer.alloc(0);

function failed(err: unknown): BatchResult {
  const e = isAppError(err) ? err : new AppError("internal_error", { cause: err });
  return { status: "failed", statusCode: e.status, error: e.message, retryable: e.status >= 429 };
}

const answer = (result: { deferred: true } | { deferred: false; messageId: string }) =>
  result.deferred
    ? ({ status: "deferred", messageId: null } as const)
    : ({ status: "sent", messageId: result.messageId } as const);

/** An inline part read whole, not yet published. */
interface Held {
  readonly index: number;
  readonly headers: Record<string, string>;
  readonly payload: Buffer;
}

/** What may follow a refused batch's close delimiter before the connection is ended instead. */
const EPILOGUE_BYTES = 64 * 1024;
/** How long a batch waits for the gateway's held bytes to free before it answers 503 batch_busy. */
const HELD_WAIT_MS = 1_000;

/**
 * Inline parts held by all batches of the gateway at once: 1/8 of the V8 heap (two whole batches
 * of the default 16 MiB for the chart's 256 MB heap), and at least what one batch may hold (its
 * maxBatchBytes, with the part and the socket read under way).
 */
export function gatewayHeldBytes(maxBatchBytes: number, inlineBytes: number): number {
  return heapShare(8, maxBatchBytes + inlineBytes + 64 * 1024);
}

/**
 * One batch's reading and publishing. Nothing is published before the body has been read whole:
 * inline parts are held (at most `maxBatchBytes`), a large part's body streams into the body
 * store and its message waits for the batch's decision. A body that breaks (a disconnect, a
 * stalled upload, more than 100 parts) so stores nothing, and the client's retry cannot
 * duplicate a message.
 */
class BatchRun {
  readonly #results: Promise<BatchResult>[] = [];
  readonly #held: Held[] = [];
  #heldBytes = 0;
  /** Of the gateway's held bytes, those this batch took (given back by `release`). */
  #taken = 0;
  /** The batch's decision, awaited by every large part before its message is published. */
  #decide!: (publish: boolean) => void;
  readonly #decided = new Promise<boolean>((resolve) => (this.#decide = resolve));

  constructor(
    private readonly reader: BatchParts,
    private readonly queue: QueueService,
    private readonly topic: TopicAddress,
    private readonly limits: BodyLimits,
    private readonly maxBatchBytes: number,
    /** The gateway's budget of held inline bytes, shared by every batch. */
    private readonly held: ByteBudget,
    /** How many of `n` further parts the rate limit takes now; the first part is the request. */
    private readonly take: (n: number) => number,
    private readonly log: (err: unknown) => void,
    /** The request's trace context, for the parts that carry none of their own. */
    private readonly trace: TraceContext | null,
  ) {}

  /** Reads the whole body; throws (having stored nothing) if it is not a good batch. */
  async read(): Promise<void> {
    let e = await this.reader.next();
    while (e) {
      if (e.kind === "data" || e.kind === "end") {
        e = await this.reader.next(); // not inside a part (cannot happen): skipped
        continue;
      }
      if (this.#results.length === LIMITS.batchMaxMessages) throw new AppError("invalid_batch");
      if (e.kind === "unreadable") {
        const message = "This part's headers could not be read: give it at least a Content-Type.";
        this.#results.push(Promise.resolve(failed(new AppError("invalid_batch", { message }))));
        e = await this.reader.next();
        continue;
      }
      e = await this.#part(e.headers);
    }
    if (this.#results.length === 0) throw new AppError("invalid_batch");
  }

  /** Publishes every part (the body was read whole): one result per part, in order. */
  async publish(): Promise<BatchResult[]> {
    this.#decide(true);
    // The request itself counted for the batch's first part when it came in.
    const further = this.#held.filter((p) => p.index > 0).length;
    let allowed = this.take(further) + (this.#held.length - further);
    for (const p of this.#held) this.#results[p.index] = this.#inline(p, allowed-- > 0);
    return Promise.all(this.#results);
  }

  /** The batch is refused: the large parts' bodies are removed, nothing is published. */
  async abandon(): Promise<void> {
    this.#decide(false);
    await Promise.all(this.#results);
  }

  /** Gives the batch's held bytes back to the gateway (once its parts are published or not). */
  release(): void {
    this.held.release(this.#taken);
    this.#taken = 0;
    this.#held.length = 0;
  }

  /** Takes a piece's bytes from the gateway's held budget before it is kept; 503 past it. */
  async #hold(bytes: number): Promise<void> {
    if (!(await this.held.take(bytes, HELD_WAIT_MS))) {
      throw batchBusy();
    }
    this.#taken += bytes;
  }

  /** Reads one part (holds it, or streams its body to the store); returns the event after it. */
  async #part(headers: Record<string, string>): Promise<BatchEvent | null> {
    const index = this.#results.length;
    const head: Uint8Array[] = [];
    let size = 0;
    let e: BatchEvent | null;
    for (;;) {
      e = await this.reader.next();
      if (e?.kind !== "data") break;
      await this.#hold(e.chunk.length);
      head.push(e.chunk);
      size += e.chunk.length;
      if (size > this.limits.inlineBytes) break;
    }
    if (e?.kind !== "data") {
      this.#heldBytes += size;
      if (this.#heldBytes > this.maxBatchBytes) {
        throw new AppError("payload_too_large", {
          message: `A batch's parts up to the inline limit may hold ${this.maxBatchBytes} bytes together (VQS_MAX_BATCH_BYTES); send fewer or smaller parts.`,
        });
      }
      this.#results.push(Promise.resolve(failed(new AppError("internal_error")))); // set by publish()
      this.#held.push({ index, headers, payload: Buffer.concat(head, size) });
      return e?.kind === "end" ? this.reader.next() : e;
    }
    // Above the inline limit: streamed into the body store as it arrives (its head, once handed
    // over, is no longer held).
    const allowed = index === 0 || this.take(1) === 1;
    const streamed = this.#streamed(index, headers, head, allowed);
    this.held.release(size);
    this.#taken -= size;
    this.#results.push((await streamed).result);
    return this.reader.next();
  }

  /**
   * Streams a large part's body to the store; resolves once the part has been read, with its
   * result to come (settled when the batch is decided; wrapped, or awaiting it would wait).
   */
  async #streamed(
    index: number,
    headers: Record<string, string>,
    head: Uint8Array[],
    allowed: boolean,
  ): Promise<{ result: Promise<BatchResult> }> {
    const reader = this.reader;
    let ended = false;
    let partRead!: () => void;
    const read = new Promise<void>((resolve) => (partRead = resolve));
    async function* rest(): AsyncGenerator<Uint8Array> {
      yield* head.splice(0);
      for (;;) {
        const e = await reader.next();
        if (e?.kind !== "data") {
          ended = true;
          partRead();
          return;
        }
        yield e.chunk;
      }
    }
    const publish = async (): Promise<BatchResult> => {
      if (!allowed) throw rateLimited();
      const input = publishInput(headers, EMPTY, this.trace);
      return answer(
        await this.queue.publishStreamed(this.topic, input, {
          source: rest(),
          declaredLength: null,
          maxBytes: this.limits.maxBytes,
          commit: this.#decided,
        }),
      );
    };
    let refusal: unknown = null;
    const result = publish().catch((err: unknown) => {
      if (isAppError(err) && err.status >= 500) this.log(err);
      if (!ended) refusal = err;
      return failed(err);
    });
    await Promise.race([read, result]);
    // A part refused before its end (too large, rate-limited, no room) is not read on: its rest
    // may be unbounded, at the minimum rate for ever. The batch is refused whole.
    if (!ended) throw partRefused(index, refusal);
    return { result };
  }

  async #inline(p: Held, allowed: boolean): Promise<BatchResult> {
    try {
      if (!allowed) throw rateLimited();
      if (p.payload.length > this.limits.maxBytes) throw new AppError("payload_too_large");
      return answer(
        await this.queue.publish(this.topic, publishInput(p.headers, p.payload, this.trace)),
      );
    } catch (err) {
      if (!isAppError(err) || err.status >= 500) this.log(err);
      return failed(err);
    }
  }
}

/** A large part's refusal before its end, as the whole batch's (the body is read no further). */
function partRefused(index: number, err: unknown): unknown {
  if (!isAppError(err) || err.code === "invalid_batch" || err.code === "request_timeout") {
    return err; // the body itself broke (or stalled): that is the answer
  }
  return new AppError(err.code, {
    message: `Part ${index + 1} was refused before its end, so the batch is refused whole and the rest of its body is not read (nothing is stored): ${err.message}`,
    ...(err.retryAfterSeconds !== undefined ? { retryAfterSeconds: err.retryAfterSeconds } : {}),
    ...(err.extra ? { extra: { ...err.extra } } : {}),
  });
}

/** `app` must hand bodies over unread (a content parser that passes the stream through). */
export function publishBatchRoute(
  app: FastifyInstance,
  queue: QueueService,
  limits: BodyLimits,
  maxBatchBytes: number,
  partsLimit: PartsLimit,
  held: ByteBudget = new ByteBudget(gatewayHeldBytes(maxBatchBytes, limits.inlineBytes)),
): void {
  app.post("/api/v3/topic/:topic/batch", { schema: PUBLISH_BATCH }, async (request, reply) => {
    const topic = topicOf(request);
    const contentType = request.headers["content-type"];
    const stream = request.body as Readable | undefined;
    if (!contentType || !/^multipart\/mixed\s*;/i.test(contentType) || !boundaryOf(contentType)) {
      refuseUnread(request, reply);
      throw new AppError("invalid_batch");
    }
    if (!stream) throw new AppError("invalid_batch");
    const signal = uploadSignal(request);
    const reader = new BatchParts(
      signal ? abortable(stream, signal) : stream,
      contentType,
      limits.inlineBytes,
    );
    const batch = new BatchRun(
      reader,
      queue,
      topic,
      limits,
      maxBatchBytes,
      held,
      (n) => (n === 0 ? 0 : partsLimit.take(request, n)),
      (err) => request.log.warn({ err }, "batch part failed"),
      traceContext(request.headers),
    );
    try {
      try {
        await batch.read();
      } catch (err) {
        // Nothing is published before the body has been read whole: the batch is refused whole
        // and what its large parts stored is removed.
        await batch.abandon();
        refuseUnread(request, reply);
        throw err;
      }
      if (!(await reader.finish(EPILOGUE_BYTES))) refuseUnread(request, reply);
      return { results: await batch.publish() } satisfies BatchAnswer;
    } finally {
      batch.release();
    }
  });
}

// Batch publish (the client's experimental_sendBatch): POST /api/v3/topic/{topic}/batch with a
// multipart/mixed body of 1 to 100 messages, each part with its own Content-Type and Vqs-*
// headers. Answers {results: [...]}: one entry per part, in order; a bad part fails alone. Each
// part counts as a request in the tenant's rate limit: the parts the budget has no room for fail
// alone with 429 rate_limited (retryable), the first ones stored. The body streams: a part above
// the inline limit goes to the body store as it arrives (like a large single publish), the
// inline parts are held until the batch is read whole or they pass VQS_MAX_BATCH_BYTES.
import type { BatchAnswer, BatchResult } from "../../../api/messages.js";
import type { FastifyInstance } from "fastify";
import type { Readable } from "node:stream";
import { AppError, isAppError } from "../../../errors.js";
import { LIMITS } from "../../../queue/limits.js";
import { BatchParts, boundaryOf, type BatchEvent } from "../../encoding/batch-parts.js";
import { abortable, type BodyLimits } from "../../encoding/publish-body.js";
import type { PartsLimit } from "../../plugins/rate-limit.js";
import { uploadSignal } from "../../plugins/upload-watchdog.js";
import type { TopicAddress } from "../../../queue/namespace.js";
import type { QueueService } from "../../../queue/queue-service.js";
import { PUBLISH_BATCH } from "../../openapi/message-routes.js";
import { topicOf } from "../../params.js";
import { publishInput } from "./publish-input.js";
import { refuseUnread } from "./publish.js";

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

/** One batch's reading and publishing, part by part. */
class BatchRun {
  readonly results: Promise<BatchResult>[] = [];
  /** Once a part has gone to the store, a body that goes bad no longer refuses the batch. */
  started = false;
  #held: Held[] = [];
  #heldBytes = 0;

  constructor(
    private readonly reader: BatchParts,
    private readonly queue: QueueService,
    private readonly topic: TopicAddress,
    private readonly limits: BodyLimits,
    private readonly maxBatchBytes: number,
    /** How many of `n` further parts the rate limit takes now; the first part is the request. */
    private readonly take: (n: number) => number,
    private readonly log: (err: unknown) => void,
  ) {}

  async run(): Promise<void> {
    let e = await this.reader.next();
    while (e) {
      if (e.kind === "data" || e.kind === "end") {
        e = await this.reader.next(); // not inside a part (cannot happen): skipped
        continue;
      }
      if (this.results.length === LIMITS.batchMaxMessages) throw new AppError("invalid_batch");
      if (e.kind === "unreadable") {
        const message = "This part's headers could not be read: give it at least a Content-Type.";
        this.results.push(Promise.resolve(failed(new AppError("invalid_batch", { message }))));
        e = await this.reader.next();
        continue;
      }
      e = await this.#part(e.headers);
    }
    if (this.results.length === 0) throw new AppError("invalid_batch");
  }

  /** Reads one part and publishes it (or holds it); returns the event after its end. */
  async #part(headers: Record<string, string>): Promise<BatchEvent | null> {
    const index = this.results.length;
    this.results.push(Promise.resolve(failed(new AppError("internal_error")))); // replaced below
    const head: Uint8Array[] = [];
    let size = 0;
    let e: BatchEvent | null;
    for (;;) {
      e = await this.reader.next();
      if (e?.kind !== "data") break;
      head.push(e.chunk);
      size += e.chunk.length;
      if (size > this.limits.inlineBytes) break;
    }
    if (e?.kind !== "data") {
      this.#held.push({ index, headers, payload: Buffer.concat(head, size) });
      this.#heldBytes += size;
      // Past the bound, what is held goes out now and the body waits until it is stored.
      if (this.#heldBytes > this.maxBatchBytes) await this.flush();
      return e?.kind === "end" ? this.reader.next() : e;
    }
    // Above the inline limit: streamed into the body store as it arrives.
    this.#release();
    this.started = true;
    const allowed = index === 0 || this.take(1) === 1;
    this.results[index] = Promise.resolve(await this.#streamed(headers, head, allowed));
    return this.reader.next();
  }

  async #streamed(
    headers: Record<string, string>,
    head: Uint8Array[],
    allowed: boolean,
  ): Promise<BatchResult> {
    const reader = this.reader;
    let ended = false;
    async function* rest(): AsyncGenerator<Uint8Array> {
      yield* head.splice(0);
      for (;;) {
        const e = await reader.next();
        if (e?.kind !== "data") {
          ended = true;
          return;
        }
        yield e.chunk;
      }
    }
    let result: BatchResult;
    try {
      if (!allowed) throw new AppError("rate_limited", { retryAfterSeconds: 1 });
      const input = publishInput(headers, EMPTY);
      result = answer(
        await this.queue.publishStreamed(this.topic, input, {
          source: rest(),
          declaredLength: null,
          maxBytes: this.limits.maxBytes,
        }),
      );
    } catch (err) {
      if (isAppError(err) && err.status >= 500) this.log(err);
      result = failed(err);
    }
    // A part refused before its end (too large, rate-limited, no room): the rest is read past.
    while (!ended) {
      const e = await reader.next();
      if (e?.kind !== "data") ended = true;
    }
    return result;
  }

  /** Publishes the held inline parts (concurrently) without waiting for them. */
  #release(): void {
    const held = this.#held.splice(0);
    if (held.length === 0) return;
    this.started = true;
    // The request itself counted for the batch's first part when it came in.
    const further = held.filter((p) => p.index > 0).length;
    let allowed = this.take(further) + (held.length - further);
    for (const p of held) {
      const ok = allowed-- > 0;
      this.results[p.index] = this.#inline(p, ok).finally(() => {
        this.#heldBytes -= p.payload.length;
      });
    }
  }

  /** Publishes what is held and waits until it is stored. */
  async flush(): Promise<void> {
    this.#release();
    await Promise.all(this.results);
  }

  async #inline(p: Held, allowed: boolean): Promise<BatchResult> {
    try {
      if (!allowed) throw new AppError("rate_limited", { retryAfterSeconds: 1 });
      if (p.payload.length > this.limits.maxBytes) throw new AppError("payload_too_large");
      return answer(await this.queue.publish(this.topic, publishInput(p.headers, p.payload)));
    } catch (err) {
      if (!isAppError(err) || err.status >= 500) this.log(err);
      return failed(err);
    }
  }
}

/** `app` must hand bodies over unread (a content parser that passes the stream through). */
export function publishBatchRoute(
  app: FastifyInstance,
  queue: QueueService,
  limits: BodyLimits,
  maxBatchBytes: number,
  partsLimit: PartsLimit,
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
    const reader = new BatchParts(signal ? abortable(stream, signal) : stream, contentType);
    const batch = new BatchRun(
      reader,
      queue,
      topic,
      limits,
      maxBatchBytes,
      (n) => (n === 0 ? 0 : partsLimit.take(request, n)),
      (err) => request.log.warn({ err }, "batch part failed"),
    );
    try {
      await batch.run();
      await batch.flush();
    } catch (err) {
      // Nothing stored yet: the batch is refused whole, as a body read whole would have been.
      if (!batch.started || !isAppError(err) || err.code !== "invalid_batch") {
        refuseUnread(request, reply);
        throw err;
      }
      // Parts are stored already: their results stand, and one failed entry stands for the
      // rest of the body, which is not read (more than 100 parts, or a broken body).
      await batch.flush();
      batch.results.push(Promise.resolve(failed(err)));
      refuseUnread(request, reply);
    }
    return { results: await Promise.all(batch.results) } satisfies BatchAnswer;
  });
}

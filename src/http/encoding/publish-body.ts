// How a publish's body is read: up to the inline limit into memory (the message carries it),
// above it as a stream for the body store. The declared size is judged before a byte is read;
// a body without Content-Length is read until it ends or passes the inline limit.
import type { IncomingHttpHeaders } from "node:http";
import { AppError } from "../../errors.js";
import type { UploadSignal } from "../plugins/upload-watchdog.js";

export type PublishBody =
  | { readonly kind: "inline"; readonly payload: Buffer }
  | {
      readonly kind: "large";
      readonly source: AsyncIterable<Uint8Array>;
      readonly declaredLength: number | null;
    };

export interface BodyLimits {
  /** Bodies up to this many bytes travel inside their message. */
  readonly inlineBytes: number;
  /** The largest body taken (413 above). */
  readonly maxBytes: number;
}

/** Content-Length, or null for a body without one (chunked). */
export function declaredLength(headers: IncomingHttpHeaders): number | null {
  if (headers["transfer-encoding"] !== undefined) return null;
  const v = headers["content-length"];
  return v === undefined ? null : Number(v);
}

/**
 * `stream` is the request body untouched (the route's content parser passes it through), or
 * undefined when the request has none.
 */
export async function readPublishBody(
  stream: AsyncIterable<Buffer> | undefined,
  headers: IncomingHttpHeaders,
  limits: BodyLimits,
): Promise<PublishBody> {
  if (!stream) return { kind: "inline", payload: Buffer.alloc(0) };
  const declared = declaredLength(headers);
  if (declared !== null && declared > limits.maxBytes) throw new AppError("payload_too_large");
  if (declared !== null && declared > limits.inlineBytes) {
    return { kind: "large", source: stream, declaredLength: declared };
  }
  const pieces = stream[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let size = 0;
  for (;;) {
    const r = await pieces.next();
    if (r.done) return { kind: "inline", payload: Buffer.concat(head, size) };
    head.push(r.value);
    size += r.value.length;
    if (size > limits.inlineBytes) break;
  }
  if (declared !== null) throw new AppError("invalid_request_body"); // more than it said
  if (size > limits.maxBytes) throw new AppError("payload_too_large");
  // Larger than inline, length unknown: what was read goes first, then the rest as it comes.
  async function* rest(): AsyncGenerator<Buffer> {
    yield* head.splice(0);
    for (;;) {
      const r = await pieces.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { kind: "large", source: rest(), declaredLength: null };
}

/**
 * `source`, failing with the signal's reason as soon as it aborts (a stalled upload). Each wait
 * races the next piece against an abort promise of its own, dropped once the piece is there: a
 * promise that lives as long as the upload would keep a reaction per race, and each reaction
 * the piece it settled with, so the whole body would stay in memory until the upload ended.
 */
export async function* abortable(
  source: AsyncIterable<Buffer>,
  signal: UploadSignal,
): AsyncGenerator<Buffer> {
  const pieces = source[Symbol.asyncIterator]();
  const reason = () => (signal.reason instanceof Error ? signal.reason : new Error("aborted"));
  for (;;) {
    if (signal.aborted) throw reason();
    let off = () => {};
    const aborted = new Promise<never>((_, reject) => {
      off = signal.onAbort(() => reject(reason()));
    });
    let r: IteratorResult<Buffer>;
    try {
      r = await Promise.race([pieces.next(), aborted]);
    } finally {
      off();
    }
    if (r.done) return;
    yield r.value;
  }
}

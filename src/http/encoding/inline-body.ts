// A publish body that declared a length within the inline limit, read into memory with the
// stream's own events: the general reader (publish-body.ts) stacks two async iterators per body
// (the stream's and the upload watchdog's race), which cost a 1 KiB publish about 4 % of its CPU.
// The listeners are shared by every read (the read's state hangs on its stream) and the upload's
// stop signal calls the read itself: a read makes its state and its promise, no closures.
import type { Readable } from "node:stream";
import { AppError } from "../../errors.js";
import type { UploadReader, UploadSignal } from "../plugins/upload-watchdog.js";

function prematureClose(): Error {
  return Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
}

/** Where a stream's read under way is kept (null once it settled). */
const READ = Symbol("inlineRead");
type Reading = Readable & { [READ]?: InlineRead | null };

class InlineRead implements UploadReader {
  /** The first piece; most 1 KiB bodies come in one. */
  first: Buffer | null = null;
  more: Buffer[] | null = null;
  size = 0;

  constructor(
    readonly stream: Reading,
    readonly declared: number,
    readonly signal: UploadSignal | undefined,
    readonly resolve: (b: Buffer) => void,
    readonly reject: (e: Error) => void,
  ) {}

  uploadAborted(reason: unknown): void {
    this.settle(abortReason(reason));
  }

  settle(err: Error | null): void {
    const stream = this.stream;
    stream[READ] = null;
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("error", onError);
    stream.off("close", onClose);
    this.signal?.setReader(null);
    if (err) {
      stream.pause();
      this.reject(err);
      return;
    }
    // A copy, as the general reader makes: a piece may be a view of a larger socket read.
    const pieces = this.more ?? (this.first ? [this.first] : []);
    this.resolve(Buffer.concat(pieces, this.size));
  }
}

function onData(this: Reading, piece: Buffer): void {
  const r = this[READ];
  if (!r) return;
  if (r.first === null) r.first = piece;
  else (r.more ??= [r.first]).push(piece);
  r.size += piece.length;
  if (r.size > r.declared) r.settle(new AppError("invalid_request_body")); // more than it said
}
function onEnd(this: Reading): void {
  this[READ]?.settle(null);
}
function onError(this: Reading, err: Error): void {
  this[READ]?.settle(err);
}
function onClose(this: Reading): void {
  this[READ]?.settle(prematureClose());
}

/**
 * The whole of `stream`, which declared `declared` bytes (at most the inline limit). Fails with
 * the signal's reason when it aborts (a stalled upload: 408), with the stream's error when the
 * client goes away, and with invalid_request_body when more than declared arrives. On failure the
 * rest is left unread, as the general reader leaves it.
 */
export function readInlineBody(
  stream: Readable,
  declared: number,
  signal: UploadSignal | undefined,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal.reason));
    if (stream.errored) return reject(stream.errored);
    if (stream.readableEnded) return resolve(Buffer.alloc(0));
    if (stream.destroyed) return reject(prematureClose());
    const s = stream as Reading;
    s[READ] = new InlineRead(s, declared, signal, resolve, reject);
    signal?.setReader(s[READ]);
    s.on("data", onData);
    s.on("end", onEnd);
    s.on("error", onError);
    s.on("close", onClose);
  });
}

function abortReason(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error("aborted");
}

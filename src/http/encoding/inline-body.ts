// A publish body that declared a length within the inline limit, read into memory with the
// stream's own events: the general reader (publish-body.ts) stacks two async iterators per body
// (the stream's and the upload watchdog's race), which cost a 1 KiB publish about 4 % of its CPU.
import type { Readable } from "node:stream";
import { AppError } from "../../errors.js";
import type { UploadSignal } from "../plugins/upload-watchdog.js";

function prematureClose(): Error {
  return Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
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
    if (signal?.aborted) return reject(abortReason(signal));
    if (stream.errored) return reject(stream.errored);
    if (stream.readableEnded) return resolve(Buffer.alloc(0));
    if (stream.destroyed) return reject(prematureClose());
    const pieces: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | null) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
      offAbort();
      // A copy, as the general reader makes: a piece may be a view of a larger socket read.
      if (!err) return resolve(Buffer.concat(pieces, size));
      stream.pause();
      reject(err);
    };
    const onData = (piece: Buffer) => {
      pieces.push(piece);
      size += piece.length;
      if (size > declared) settle(new AppError("invalid_request_body")); // more than it said
    };
    const onEnd = () => settle(null);
    const onError = (err: Error) => settle(err);
    const onClose = () => settle(prematureClose());
    const offAbort = signal ? signal.onAbort(() => settle(abortReason(signal))) : () => undefined;
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.once("error", onError);
    stream.once("close", onClose);
  });
}

function abortReason(signal: UploadSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted");
}

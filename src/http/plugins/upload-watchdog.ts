// The minimum upload rate (minUploadBytesPerSecond, fixed) instead of a fixed request timeout:
// a request body must bring at least the rate's worth of bytes in every 60 s, however long it
// is, so a 100 MB upload over a slow link finishes and a trickled body (slowloris) does not hold
// a connection for ever. One timer per gateway looks at the bodies under way every 5 s (a quarter window at most). A
// publish hears of it through its request's signal and answers 408 request_timeout; any other
// request's connection is closed.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { IncomingMessage } from "node:http";
import { AppError } from "../../errors.js";
import type { MinimumRate } from "../minimum-rate.js";

interface Upload {
  readonly raw: IncomingMessage;
  readonly startBytes: number;
  readonly startedAt: number;
  /**
   * (time, bytes) samples, the oldest at least a window old once there is one; made by the first
   * check that finds the body still arriving (most bodies have ended by then).
   */
  samples: { at: number; bytes: number }[] | null;
  readonly abort: UploadAbort;
  /** A route reads the body through the signal (and answers 408 itself). */
  taken: boolean;
}

/** An upload's stop signal: what a route needs of an AbortSignal, without an EventTarget. */
export interface UploadSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  /**
   * `listener` runs once, when the upload is stopped (never if it already was). Returns what
   * takes it off again, so a listener per wait does not pile up for the upload's lifetime.
   */
  onAbort(listener: () => void): () => void;
  /**
   * The body's one reader (the inline reader), told when the upload is stopped: no closure and
   * no listener set per body, as with `onAbort`. null takes it off again.
   */
  setReader(reader: UploadReader | null): void;
}

/** A reader of a body that hears of its upload's stop itself. */
export interface UploadReader {
  uploadAborted(reason: unknown): void;
}

/**
 * One per request with a body: an AbortController (an EventTarget and an AbortSignal) cost a
 * publish about 4 % of its gateway CPU, for a signal that almost never fires.
 */
export class UploadAbort implements UploadSignal {
  aborted = false;
  reason: unknown = undefined;
  /** Made by the first listener: most bodies are read without a wait that listens. */
  #listeners: Set<() => void> | null = null;
  #reader: UploadReader | null = null;

  onAbort(listener: () => void): () => void {
    if (this.aborted) return () => {};
    const listeners = (this.#listeners ??= new Set());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  setReader(reader: UploadReader | null): void {
    this.#reader = this.aborted ? null : reader;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners ? [...this.#listeners] : [];
    this.#listeners?.clear();
    const reader = this.#reader;
    this.#reader = null;
    reader?.uploadAborted(reason);
    for (const l of listeners) l();
  }
}

declare module "fastify" {
  interface FastifyRequest {
    /** The request's body under watch (installUploadWatchdog), null without a body. */
    vqsUpload: Upload | null;
  }
}

/**
 * Aborts (with AppError request_timeout) when the request's body arrives too slowly; the route
 * that asks for it answers the 408 itself.
 */
export function uploadSignal(request: FastifyRequest): UploadSignal | undefined {
  const u = request.vqsUpload;
  if (!u) return undefined;
  u.taken = true;
  return u.abort;
}

export function installUploadWatchdog(app: FastifyInstance, options: MinimumRate): void {
  const WINDOW_MS = options.windowMs;
  const CHECK_MS = Math.min(5_000, WINDOW_MS / 4);
  // The bodies under way, by request. A body read to its end leaves at once (`release`): kept
  // until the next check, every request of the last 5 s (with its IncomingMessage) outlived the
  // young generation, and the collector's old-generation work grew with the request rate.
  app.decorateRequest("vqsUpload", null);
  const uploads = new Map<IncomingMessage, Upload>();
  const release = function (this: IncomingMessage) {
    uploads.delete(this);
  };
  let timer: NodeJS.Timeout | null = null;
  const check = () => {
    const now = Date.now();
    for (const u of uploads.values()) {
      if (u.raw.complete || u.raw.destroyed) {
        uploads.delete(u.raw);
        continue;
      }
      const bytes = u.raw.socket.bytesRead - u.startBytes;
      u.samples ??= [{ at: u.startedAt, bytes: 0 }];
      u.samples.push({ at: now, bytes });
      while (u.samples.length > 1 && u.samples[1]!.at <= now - WINDOW_MS) u.samples.shift();
      const from = u.samples[0]!;
      const windowFull = now - u.startedAt >= WINDOW_MS && now - from.at >= WINDOW_MS;
      if (!windowFull) continue;
      const rate = ((bytes - from.bytes) * 1000) / (now - from.at);
      if (rate >= options.minBytesPerSecond) continue;
      uploads.delete(u.raw);
      if (u.abort.aborted) continue;
      u.abort.abort(new AppError("request_timeout"));
      // Nobody reads this body through the signal (a route other than publish): close it.
      if (!u.taken) u.raw.socket.destroy();
    }
    if (uploads.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
  app.addHook("onRequest", (request, _reply, done) => {
    const h = request.headers;
    const hasBody =
      h["transfer-encoding"] !== undefined ||
      (h["content-length"] !== undefined && h["content-length"] !== "0");
    if (hasBody) {
      const raw = request.raw;
      const u: Upload = {
        raw,
        startBytes: raw.socket.bytesRead,
        startedAt: Date.now(),
        samples: null,
        abort: new UploadAbort(),
        taken: false,
      };
      uploads.set(raw, u);
      raw.on("end", release); // one function for all requests: nothing made per request
      // A decorated field, not a WeakMap keyed by the request: no table entry per request.
      request.vqsUpload = u;
      timer ??= setInterval(check, CHECK_MS).unref();
    }
    done();
  });
}

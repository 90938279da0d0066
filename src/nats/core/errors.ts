// Translates NATS and JetStream failures into the error catalogue, keeping the cause. Anything
// the store could not do is "storage unavailable" (503, retryable), never a 500 with internals.
import { NoRespondersError, RequestError } from "@nats-io/transport-node";
import { AppError, isAppError } from "../../errors.js";
import { JetStreamApiCodes, JetStreamApiError, JetStreamError } from "@nats-io/jetstream";
import { NoRespondersError as OurNoResponders, PubAckError } from "./requests.js";

export function toStorageError(err: unknown): AppError {
  if (isAppError(err)) return err;
  return new AppError("storage_unavailable", { cause: err });
}

/**
 * Nobody serves the subject: on a JetStream subject that means the stream or consumer is gone
 * (or JetStream is down, which the retry then shows). nats.js reports it several ways, and wraps
 * it (jetstream's JetStreamNotEnabled) keeping it as the cause.
 */
export function isNoResponders(err: unknown): boolean {
  return (
    err instanceof NoRespondersError ||
    err instanceof OurNoResponders ||
    (err instanceof RequestError && err.isNoResponders()) ||
    (err instanceof Error && err.cause !== undefined && isNoResponders(err.cause))
  );
}

/** A JetStream API error (or a publish acknowledgement's error) with the given code. */
export function isApiError(err: unknown, code: number): boolean {
  return (err instanceof JetStreamApiError || err instanceof PubAckError) && err.code === code;
}

/**
 * The topic's stream is not there (removed by the idle-topic sweeper or an operator), and the
 * operation stored nothing: it may be retried once the stream is created again.
 */
export class StreamGoneError extends Error {
  constructor(stream: string, cause: unknown) {
    super(`stream ${stream} is gone`, { cause });
    this.name = "StreamGoneError";
  }
}

/** Why the store did not take a write, for vqs_store_write_failures_total. */
export type WriteFailureCause =
  "no_space" | "insufficient_resources" | "timeout" | "unavailable" | "other";

/**
 * Sorts a failed write. A disk that fills below JetStream's own limit makes nats-server log a
 * critical write error and never answer the publish (a timeout); its own limit answers at once
 * (10047); an API call on a full disk answers "no space left on device".
 */
export function writeFailureCause(err: unknown): WriteFailureCause {
  const text = errorText(err);
  if (/no space left on device/i.test(text)) return "no_space";
  if (hasCode(err, INSUFFICIENT_RESOURCES) || /insufficient resources/i.test(text)) {
    return "insufficient_resources";
  }
  if (/timeout/i.test(text)) return "timeout";
  if (isNoResponders(err) || /not connected|connection (closed|draining)/i.test(text)) {
    return "unavailable";
  }
  return "other";
}

/**
 * A topic stream's own byte limit refused the write (max_bytes with discard new, VQS_TOPIC_HARD_
 * MAX_BYTES): nats-server answers "maximum bytes exceeded" (10077 on 2.10+, text only on 2.9).
 */
export function isStreamFull(err: unknown): boolean {
  return /maximum bytes exceeded/i.test(errorText(err));
}

/** JetStream's "insufficient resources" (a storage limit reached). */
const INSUFFICIENT_RESOURCES = 10047;

function hasCode(err: unknown, code: number): boolean {
  if (isApiError(err, code)) return true;
  return err instanceof Error && err.cause !== undefined && hasCode(err.cause, code);
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return `${err.name} ${err.message} ${err.cause !== undefined ? errorText(err.cause) : ""}`;
}

/**
 * Resolves or rejects as `work` does, or rejects with `onTimeout()` once `ms` have passed; the
 * work goes on, and its late outcome is dropped.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  // One promise and one subscription on `work` (a race with a deadline promise and a `finally`
  // made four more per publish).
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), ms);
    work.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err); // eslint-disable-line @typescript-eslint/prefer-promise-reject-errors -- passed on as it came
      },
    );
  });
}

/** JetStream's answer to deleting a message that is not there (10057, "no message found"). */
const MESSAGE_DELETE_FAILED = 10057;

/**
 * The message is not there: a get's "no message found" (10037), or a delete's (10057 with that
 * text; other delete failures share the code).
 */
export function isMessageGone(err: unknown): boolean {
  return (
    isApiError(err, JetStreamApiCodes.NoMessageFound) ||
    (isApiError(err, MESSAGE_DELETE_FAILED) && /no message found/i.test(errorText(err)))
  );
}

/**
 * A Direct Get (or batch) found nothing: the API's "no message found", or the 404 status a
 * batch or a start-time read answers with instead.
 */
export function isNothingFound(err: unknown): boolean {
  return (
    isApiError(err, JetStreamApiCodes.NoMessageFound) ||
    (err instanceof JetStreamError && (err as { code?: unknown }).code === 404)
  );
}

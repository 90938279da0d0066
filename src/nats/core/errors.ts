// Translates NATS and JetStream failures into the error catalogue, keeping the cause. Anything
// the store could not do is "storage unavailable" (503, retryable), never a 500 with internals.
import { NoRespondersError, RequestError } from "@nats-io/transport-node";
import { AppError, isAppError } from "../../errors.js";
import { JetStreamApiError } from "@nats-io/jetstream";
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

/**
 * The server answered that it did not do the request (an error reply, or nobody serving the
 * subject), as opposed to a timeout, after which the request may still take effect.
 */
export function isRefusal(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError ||
    err instanceof PubAckError ||
    isNoResponders(err) ||
    (err instanceof Error && err.cause !== undefined && isRefusal(err.cause))
  );
}

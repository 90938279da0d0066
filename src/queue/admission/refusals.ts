// The refusals of a gateway's own bounds (what one gateway holds at once, per namespace, per
// tenant or in all): their codes and Retry-After are decided here, wherever the count is kept.
// Each comes before anything is stored or leased, so the client only has to come back.
import { AppError } from "../../errors.js";

/** A cap of requests in flight per namespace and tenant on this gateway (namespace-counts.ts). */
export function tooManyRequestsInFlight(): AppError {
  return new AppError("too_many_requests_in_flight", { retryAfterSeconds: 1 });
}

/** A cap of waiting receives per namespace and tenant on this gateway. */
export function tooManyWaiters(): AppError {
  return new AppError("too_many_waiters", { retryAfterSeconds: 1 });
}

/** The gateway's share of its heap for full-payload peek pages is taken. */
export function peekBusy(): AppError {
  return new AppError("peek_busy", { retryAfterSeconds: 1 });
}

/** The gateway's budget of batch parts held in memory stayed taken for the wait allowed. */
export function batchBusy(): AppError {
  return new AppError("batch_busy", { retryAfterSeconds: 1 });
}

/** The tenant's request or byte rate in the region is spent. */
export function rateLimited(retryAfterSeconds = 1): AppError {
  return new AppError("rate_limited", { retryAfterSeconds });
}

/** The gateway moves as many large bodies as it may (uploads, or downloads asked by ID). */
export function largeBodyBusy(message?: string): AppError {
  return message === undefined
    ? new AppError("large_body_busy", { retryAfterSeconds: 1 })
    : new AppError("large_body_busy", { message });
}

// How long a message waits after a failed push (the settings' `retry`): `afterSeconds`
// for the first 32 failed attempts (the hosted trigger's retryAfterSeconds), then doubling per
// attempt up to `maxBackoffSeconds` ("configured delay for the first 32 attempts, then forced
// backoff").
import type { RetrySettings } from "../settings/consumer-settings.js";

/** Failed attempts that wait `afterSeconds` before the backoff starts. */
export const PLAIN_RETRIES = 32;

/** Seconds before the message comes back after the `attempt`-th push of it failed (1-based). */
export function retryDelaySeconds(retry: RetrySettings, attempt: number): number {
  if (attempt <= PLAIN_RETRIES) return retry.afterSeconds;
  // Doubling from at least a second: a configured 0 must not retry a failing endpoint at once
  // for ever.
  const doubled = Math.max(1, retry.afterSeconds) * 2 ** Math.min(attempt - PLAIN_RETRIES, 30);
  return Math.min(retry.maxBackoffSeconds, doubled);
}

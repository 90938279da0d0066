// How long a pushed message is leased to its handler: the push's timeout plus a margin, and, for a
// handler that settles through the API (`autoAck` false, as `handleCallback`), never shorter than
// the client needs to extend it. Also the `ack_wait` of a pushed group's consumer, so a push sets
// no lease of its own (docs/architecture.md, "Push delivery").
import type { PushSettings } from "../settings/consumer-settings.js";

/** A push's lease outlasts its request by this much, so a late answer still finds it leased. */
const LEASE_MARGIN_MS = 2000;

/**
 * `@vercel/queue` (0.3.1 to 0.6.0) first extends a pushed message's lease at
 * max(10 s, min(60 s, time left / 5)) after it arrives: for any lease of at most 50 s that is
 * 10 s. A shorter lease would end before the handler can extend it, and a handler still running
 * would see its message pushed again. 30 s (the client's own least visibility timeout) leaves
 * 20 s for that first extension to arrive.
 */
export const MIN_HANDLER_LEASE_MS = 30_000;

export function pushLeaseMs(push: PushSettings): number {
  const ms = push.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
  return push.autoAck ? ms : Math.max(ms, MIN_HANDLER_LEASE_MS);
}

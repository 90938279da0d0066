// What the connected nats-server can do, from its version (nc.info.version). Older servers
// silently ignore stream and consumer settings they do not know (2.9 keeps messages a stream
// created with `allow_msg_ttl` should expire, and gives a consumer created with `filter_subjects`
// no filter), so a feature is used only when the version says the server has it: metadata and
// `filter_subjects` from 2.10, per-message TTL from 2.11, scheduled messages from 2.12.

/** Whether `version` is at least 2.`minor` (false when it cannot be read). */
function atLeast(version: string | undefined, minor: number): boolean {
  const m = /^v?(\d+)\.(\d+)\./.exec(version ?? "");
  if (!m) return false;
  return Number(m[1]) > 2 || (Number(m[1]) === 2 && Number(m[2]) >= minor);
}

/** Per-message TTL (`Nats-TTL`, stream `allow_msg_ttl`): nats-server 2.11.0. */
export function supportsMessageTtl(version: string | undefined): boolean {
  return atLeast(version, 11);
}

/**
 * Servers older than 2.10 are supported for compatibility only (docs/operations.md, "nats-server
 * versions"): the gateway says so at start.
 */
export function isCompatibilityServer(version: string | undefined): boolean {
  return !atLeast(version, 10);
}

/** The Nats-TTL of a copy of a message expiring at `expiresAtMs`: whole seconds, at least 1. */
export function remainingTtl(expiresAtMs: number, nowMs: number): string {
  return String(Math.max(1, Math.ceil((expiresAtMs - nowMs) / 1000)));
}

// What the connected nats-server can do, from its version (nc.info.version). Older servers
// silently ignore stream settings they do not know, so a feature is used only when the version
// says the server has it (see ../shared/design/jetstream-notes.md, "Versions").

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

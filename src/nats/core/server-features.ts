// What the connected nats-server can do, from its version (nc.info.version). Older servers
// silently ignore stream settings they do not know, so a feature is used only when the version
// says the server has it (see ../shared/design/jetstream-notes.md, "Versions").

/** Per-message TTL (`Nats-TTL`, stream `allow_msg_ttl`): nats-server 2.11.0. */
export function supportsMessageTtl(version: string | undefined): boolean {
  const m = /^v?(\d+)\.(\d+)\./.exec(version ?? "");
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 2 || (major === 2 && minor >= 11);
}

/** The Nats-TTL of a copy of a message expiring at `expiresAtMs`: whole seconds, at least 1. */
export function remainingTtl(expiresAtMs: number, nowMs: number): string {
  return String(Math.max(1, Math.ceil((expiresAtMs - nowMs) / 1000)));
}

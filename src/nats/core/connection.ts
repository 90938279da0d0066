// Connects to the region's NATS servers and keeps reconnecting forever: a gateway never gives up
// on its store, it answers 503 while the store is away and recovers by itself.
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { readFile } from "node:fs/promises";
import type { Logger } from "../../logger.js";
import { coalesceWrites } from "./write-coalescing.js";

export interface NatsConnectOptions {
  readonly servers: readonly string[];
  readonly name: string;
  readonly credsFile: string | null;
  readonly user: string | null;
  readonly password: string | null;
  readonly token: string | null;
  /** Merge the NATS writes of one event-loop turn (default on; see write-coalescing.ts). */
  readonly coalesceWrites?: boolean;
}

/** Tracks whether the connection is up right now (for fast failover and the gauge). */
export function watchConnection(
  nc: NatsConnection,
  onChange?: (up: boolean) => void,
): () => boolean {
  let up = !nc.isClosed();
  onChange?.(up);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      if (s.type === "reconnect") up = true;
      onChange?.(up);
    }
    up = false;
    onChange?.(up);
  })();
  return () => up && !nc.isClosed();
}

export async function connectNats(opts: NatsConnectOptions, log: Logger): Promise<NatsConnection> {
  const nc = await connect({
    servers: [...opts.servers],
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
    // No stack trace captured per request for a timeout that rarely comes: measured to halve the
    // client's CPU per publish (bench/, docs/performance.md). Errors still carry their cause.
    noAsyncTraces: true,
    ...(opts.credsFile
      ? { authenticator: credsAuthenticator(await readFile(opts.credsFile)) }
      : {}),
    ...(opts.user ? { user: opts.user, pass: opts.password ?? "" } : {}),
    ...(opts.token ? { token: opts.token } : {}),
  });
  if (opts.coalesceWrites !== false) coalesceWrites(nc);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "reconnect" || s.type === "error") {
        log.warn(
          { nats: s.type, server: "server" in s ? s.server : undefined },
          "NATS connection status",
        );
      }
    }
  })();
  return nc;
}

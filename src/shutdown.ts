// Graceful shutdown, in one place: readiness turns false first (load balancers stop sending new
// requests), then after a short delay the listener closes, in-flight requests finish, the delay
// scheduler stops and NATS is drained. main.ts runs it on SIGTERM, bounded by the grace period.
import type { Gateway } from "./gateway.js";
import type { Logger } from "./logger.js";

export interface ShutdownOptions {
  /** Time between readiness turning false and the listener closing. */
  readonly delayMs: number;
  readonly log: Logger;
}

export async function shutDown(gateway: Gateway, opts: ShutdownOptions): Promise<void> {
  gateway.stopBeingReady();
  opts.log.info({ delayMs: opts.delayMs }, "shutdown: readiness is now false");
  await new Promise((r) => setTimeout(r, opts.delayMs));
  await gateway.close();
  opts.log.info("shutdown: requests finished, NATS drained");
}

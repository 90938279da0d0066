// The gateways' common clock: NATS server time, estimated from a KV write's server timestamp.
// Every comparison with message times (expiry, due delays, lease deadlines in handles and ID
// leases) uses it, so gateways whose own clocks drift still agree with each other and with the
// server timestamps the times are anchored to. The error is about half a round trip.
//
// Between measurements the estimate advances on the monotonic clock, not the host's wall clock:
// a host clock stepped by minutes (NTP, an operator) would otherwise move the estimate with it
// until the next measurement, and a gateway would move delayed messages minutes early (found by
// the nemesis tests, test/nemesis/).
import type { KV } from "@nats-io/kv";

export class ServerClock {
  readonly #localNow: () => number;
  readonly #monotonic: () => number;
  /** The server time measured last, and the monotonic reading it belongs to. */
  #anchor: { serverMs: number; monotonicMs: number } | null = null;
  #offsetMs = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    localNow: () => number = Date.now,
    monotonic: () => number = () => performance.now(),
  ) {
    this.#localNow = localNow;
    this.#monotonic = monotonic;
  }

  /** Estimated server time, in ms since the epoch (the host's clock until a first measurement). */
  now = (): number =>
    this.#anchor
      ? // Whole milliseconds, as Date.now() gives: durations derived from it go to the server
        // as integers (a -NAK delay in fractional nanoseconds is not a delay).
        Math.round(this.#anchor.serverMs + (this.#monotonic() - this.#anchor.monotonicMs))
      : this.#localNow();

  /** Server time minus host time, as of the last measurement (for logs). */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** Measures once: the server stamps a KV write between our two readings. */
  async sync(kv: KV, key: string): Promise<void> {
    const before = this.#monotonic();
    const localBefore = this.#localNow();
    await kv.put(key, "");
    const after = this.#monotonic();
    const entry = await kv.get(key);
    if (!entry) return;
    const serverMs = entry.created.getTime();
    this.#anchor = { serverMs, monotonicMs: (before + after) / 2 };
    this.#offsetMs = serverMs - (localBefore + (after - before) / 2);
  }

  /** Keeps the estimate fresh (clocks drift); failures keep the last one. */
  start(kv: () => Promise<KV>, key: string, everyMs = 60_000): void {
    const tick = () =>
      void kv()
        .then((b) => this.sync(b, key))
        .catch(() => undefined);
    this.#timer = setInterval(tick, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}

// The gateways' common clock: NATS server time, estimated from a KV write's server timestamp.
// Every comparison with message times (expiry, due delays, lease deadlines in handles and ID
// leases) uses it, so gateways whose own clocks drift still agree with each other and with the
// server timestamps the times are anchored to. The error is about half a round trip.
import type { KV } from "@nats-io/kv";

export class ServerClock {
  readonly #localNow: () => number;
  #offsetMs = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(localNow: () => number = Date.now) {
    this.#localNow = localNow;
  }

  /** Estimated server time, in ms since the epoch. */
  now = (): number => this.#localNow() + this.#offsetMs;

  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** Measures the offset once: the server stamps a KV write between our two readings. */
  async sync(kv: KV, key: string): Promise<void> {
    const before = this.#localNow();
    await kv.put(key, "");
    const after = this.#localNow();
    const entry = await kv.get(key);
    if (!entry) return;
    this.#offsetMs = entry.created.getTime() - (before + after) / 2;
  }

  /** Keeps the offset fresh (clocks drift); failures keep the last estimate. */
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

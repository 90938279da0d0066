// The request rate limit's counts: a one-second window per tenant, shared by @fastify/rate-limit
// (one per request, as its own store would count) and by a batch's further parts (each part is a
// message: a batch of 100 counts as 100 requests, as a queue service's message rate limits do).
import type { FastifyRateLimitStore } from "@fastify/rate-limit";

interface Window {
  current: number;
  startMs: number;
}

export class TenantWindows implements FastifyRateLimitStore {
  readonly #max: number;
  /** Least recently used first. */
  readonly #windows = new Map<string, Window>();

  /** Remembers `maxTenants` at most (the least recently used are forgotten first). */
  constructor(maxTenants: number) {
    this.#max = maxTenants;
  }

  /** Counts one request (refused ones too, as @fastify/rate-limit's own store does). */
  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
  ): void {
    const now = Date.now();
    const w = this.#window(key, now, timeWindow);
    w.current++;
    callback(null, { current: w.current, ttl: timeWindow - (now - w.startMs) });
  }

  /** Every route counts in the same windows: a tenant's budget is one, whatever it calls. */
  child(): FastifyRateLimitStore {
    return this;
  }

  /** Takes up to `n` more from the tenant's window of `max`; answers how many it took. */
  take(key: string, n: number, max: number, timeWindow: number): number {
    const w = this.#window(key, Date.now(), timeWindow);
    const taken = Math.max(0, Math.min(n, max - w.current));
    w.current += taken;
    return taken;
  }

  #window(key: string, now: number, timeWindow: number): Window {
    let w = this.#windows.get(key);
    if (w) this.#windows.delete(key); // re-inserted: most recently used last
    if (!w || w.startMs + timeWindow <= now) w = { current: 0, startMs: now };
    this.#windows.set(key, w);
    if (this.#windows.size > this.#max) this.#windows.delete(this.#windows.keys().next().value!);
    return w;
  }
}

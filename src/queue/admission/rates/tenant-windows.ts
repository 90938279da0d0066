// The request rate limit's counts: a one-second window per tenant, shared by the requests (one
// each, refused ones too) and by a batch's further parts (each part is a message: a batch of 100
// counts as 100 requests, as a queue service's message rate limits do).

interface Window {
  current: number;
  startMs: number;
}

export class TenantWindows {
  readonly #max: number;
  readonly #now: () => number;
  /** Least recently used first. */
  readonly #windows = new Map<string, Window>();

  /** Remembers `maxTenants` at most (the least recently used are forgotten first). */
  constructor(maxTenants: number, now: () => number) {
    this.#max = maxTenants;
    this.#now = now;
  }

  /** Counts one request (refused ones too); answers the window's count and time left. */
  count(key: string, timeWindow: number): { current: number; ttl: number } {
    const now = this.#now();
    const w = this.#window(key, now, timeWindow);
    w.current++;
    return { current: w.current, ttl: timeWindow - (now - w.startMs) };
  }

  /**
   * Counts one request against a window of `max`: null when it is within, else the refusal's
   * Retry-After seconds (what is left of the window, at least 1).
   */
  admit(key: string, max: number, timeWindow: number): number | null {
    const w = this.count(key, timeWindow);
    return w.current <= max ? null : Math.max(1, Math.ceil(w.ttl / 1000));
  }

  /** Takes up to `n` more from the tenant's window of `max`; answers how many it took. */
  take(key: string, n: number, max: number, timeWindow: number): number {
    const w = this.#window(key, this.#now(), timeWindow);
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

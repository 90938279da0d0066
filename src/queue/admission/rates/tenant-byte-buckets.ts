// The body-byte rate limit's decision: a bucket per tenant that empties at the tenant's share of
// the regional budget per second and holds one second's share. Bytes are taken when they fit, or
// when the bucket is empty (a body larger than a second's budget then holds the tenant's next
// requests back until its bytes have drained); otherwise 429 rate_limited, with a Retry-After of
// the time the excess takes to drain.
import type { AppError } from "../../../errors.js";
import { rateLimited } from "../refusals.js";

export class TenantByteBuckets {
  readonly #max: number;
  readonly #now: () => number;
  /** Least recently used first. */
  readonly #buckets = new Map<string, { level: number; at: number }>();

  /** Remembers `maxTenants` at most (the least recently used are forgotten first). */
  constructor(maxTenants: number, now: () => number) {
    this.#max = maxTenants;
    this.#now = now;
  }

  /** Takes `bytes` for the tenant from a bucket draining `share` per second, or the refusal. */
  take(tenant: string, bytes: number, share: number): AppError | null {
    const now = this.#now();
    let b = this.#buckets.get(tenant);
    if (b)
      this.#buckets.delete(tenant); // re-inserted: most recently used last
    else b = { level: 0, at: now };
    b.level = Math.max(0, b.level - ((now - b.at) / 1000) * share);
    b.at = now;
    this.#buckets.set(tenant, b);
    if (this.#buckets.size > this.#max) this.#buckets.delete(this.#buckets.keys().next().value!);
    if (b.level > 0 && b.level + bytes > share) {
      return rateLimited(Math.max(1, Math.ceil((b.level + bytes - share) / share)));
    }
    b.level += bytes;
    return null;
  }
}

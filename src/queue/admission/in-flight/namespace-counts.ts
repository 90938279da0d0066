// Per-namespace counts on one gateway (requests in flight, waiting receives, pushes in flight),
// each with a cap that holds for the namespace and for its tenant (all its deployments
// together), so that neither one deployment nor one token spread over invented deployment IDs
// can take all of a gateway's slots of a kind. Only namespaces and tenants with something
// counted are kept: the maps are bounded by what is in flight.
import { tenantKeyOf } from "../tenant.js";

export class NamespaceCounts {
  readonly #cap: number;
  readonly #counts = new Map<string, number>();
  readonly #tenants = new Map<string, number>();
  /** Refusals since start (for a metric). */
  refused = 0;

  /** `cap` per namespace and per tenant; 0: no cap (counted all the same). */
  constructor(cap: number) {
    this.#cap = cap;
  }

  get cap(): number {
    return this.#cap;
  }

  /**
   * Counts one more for the namespace (and its tenant); false (and nothing counted) when
   * either is at its cap.
   */
  take(namespaceKey: string): boolean {
    const n = this.#counts.get(namespaceKey) ?? 0;
    const tenant = tenantKeyOf(namespaceKey);
    const t = this.#tenants.get(tenant) ?? 0;
    if (this.#cap > 0 && (n >= this.#cap || t >= this.#cap)) {
      this.refused++;
      return false;
    }
    this.#counts.set(namespaceKey, n + 1);
    this.#tenants.set(tenant, t + 1);
    return true;
  }

  /** Counts one more whatever the cap (work already taken on that must be done). */
  add(namespaceKey: string): void {
    this.#counts.set(namespaceKey, (this.#counts.get(namespaceKey) ?? 0) + 1);
    const tenant = tenantKeyOf(namespaceKey);
    this.#tenants.set(tenant, (this.#tenants.get(tenant) ?? 0) + 1);
  }

  release(namespaceKey: string): void {
    decrement(this.#counts, namespaceKey);
    decrement(this.#tenants, tenantKeyOf(namespaceKey));
  }

  count(namespaceKey: string): number {
    return this.#counts.get(namespaceKey) ?? 0;
  }

  /** What the namespace may still take: the smaller of its own room and its tenant's. */
  room(namespaceKey: string): number {
    if (this.#cap === 0) return Infinity;
    const t = this.#tenants.get(tenantKeyOf(namespaceKey)) ?? 0;
    return Math.max(0, this.#cap - Math.max(this.count(namespaceKey), t));
  }

  /** Namespaces at their cap now, or whose tenant is (for a gauge). */
  get atCap(): number {
    if (this.#cap === 0) return 0;
    let n = 0;
    for (const [key, c] of this.#counts) {
      if (c >= this.#cap || (this.#tenants.get(tenantKeyOf(key)) ?? 0) >= this.#cap) n++;
    }
    return n;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

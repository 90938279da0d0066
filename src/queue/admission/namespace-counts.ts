// Per-namespace counts on one gateway (requests in flight, waiting receives, pushes in flight),
// each with a cap, so that one namespace cannot take all of a gateway's slots of a kind. Only
// namespaces with something counted are kept: the map is bounded by what is in flight.

export class NamespaceCounts {
  readonly #cap: number;
  readonly #counts = new Map<string, number>();
  /** Refusals since start (for a metric). */
  refused = 0;

  /** `cap` per namespace; 0: no cap (counted all the same). */
  constructor(cap: number) {
    this.#cap = cap;
  }

  get cap(): number {
    return this.#cap;
  }

  /** Counts one more for the namespace; false (and nothing counted) when it is at its cap. */
  take(namespaceKey: string): boolean {
    const n = this.#counts.get(namespaceKey) ?? 0;
    if (this.#cap > 0 && n >= this.#cap) {
      this.refused++;
      return false;
    }
    this.#counts.set(namespaceKey, n + 1);
    return true;
  }

  /** Counts one more whatever the cap (work already taken on that must be done). */
  add(namespaceKey: string): void {
    this.#counts.set(namespaceKey, (this.#counts.get(namespaceKey) ?? 0) + 1);
  }

  release(namespaceKey: string): void {
    const n = (this.#counts.get(namespaceKey) ?? 0) - 1;
    if (n <= 0) this.#counts.delete(namespaceKey);
    else this.#counts.set(namespaceKey, n);
  }

  count(namespaceKey: string): number {
    return this.#counts.get(namespaceKey) ?? 0;
  }

  /** Namespaces at their cap now (for a gauge). */
  get atCap(): number {
    if (this.#cap === 0) return 0;
    let n = 0;
    for (const c of this.#counts.values()) if (c >= this.#cap) n++;
    return n;
  }
}

// A cap per namespace, and per tenant all its deployments together, on delayed publishes per
// second in the region (a batch's delayed parts
// each count): a timer flood costs every namespace the gateways' and servers' work of storing
// and later moving it, whatever its shard, and a batch lets one request carry 100 of them. The
// regional budget is shared out like the rate limits: each gateway allows its part, in
// proportion to its part of the namespace's demand (src/nats/core/demand-exchange.ts).
import { AppError } from "../../../errors.js";
import { tenantKeyOf } from "../tenant.js";

/** This gateway's part of a regional budget, and where demand is counted. */
export interface DelayedDemand {
  note(namespaceKey: string, n: number): void;
  share(namespaceKey: string, limit: number): number;
}

/** Namespaces counted in one second at most (the window starts again past it). */
const MAX_NAMESPACES = 100_000;

export class DelayedPublishCap {
  readonly #perSecond: number;
  readonly #demand: DelayedDemand;
  readonly #now: () => number;
  #window = 0;
  #used = new Map<string, number>();

  /** `perSecond` 0: no cap. */
  constructor(perSecond: number, demand: DelayedDemand, now: () => number) {
    this.#perSecond = perSecond;
    this.#demand = demand;
    this.#now = now;
  }

  /**
   * Counts one delayed publish of the namespace, or refuses it (429, Retry-After: 1): the cap
   * holds for the namespace and for its tenant, all its deployments together.
   */
  take(namespaceKey: string): void {
    if (this.#perSecond === 0) return;
    const second = Math.floor(this.#now() / 1000);
    if (second !== this.#window || this.#used.size > MAX_NAMESPACES) {
      this.#window = second;
      this.#used = new Map();
    }
    // Counted before the decision, refused ones too: a gateway asked for more gets more.
    this.#demand.note(namespaceKey, 1);
    const tenant = tenantKeyOf(namespaceKey);
    this.#demand.note(tenant, 1);
    const spent = this.#used.get(namespaceKey) ?? 0;
    const tenantSpent = this.#used.get(tenant) ?? 0;
    if (
      spent >= this.#demand.share(namespaceKey, this.#perSecond) ||
      tenantSpent >= this.#demand.share(tenant, this.#perSecond)
    ) {
      throw new AppError("delayed_publish_rate_limited", { retryAfterSeconds: 1 });
    }
    this.#used.set(namespaceKey, spent + 1);
    this.#used.set(tenant, tenantSpent + 1);
  }
}

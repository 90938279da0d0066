// The usage port: what admission needs to know of what a tenant holds in the store, over all its
// deployments. The NATS adapter implements it (src/nats/queue-state/usage/tenant-usage.ts) with one
// region-wide read shared by every tenant asking at once.

/** What a tenant holds, as the store showed it when read. */
export interface TenantUsage {
  readonly topics: number;
  /** Consumer groups, all topics together. */
  readonly groups: number;
  /** Bytes of its topics' messages (large bodies are bounded by their own share). */
  readonly bytes: number;
  /** Consumer settings documents. */
  readonly settings: number;
  /** Namespace keys of its live deployments: those holding topics or settings. */
  readonly deployments: ReadonlySet<string>;
}

export interface UsagePort {
  /** Reads the tenant's usage now (a read already under way is shared). */
  readTenant(tenantKey: string): Promise<TenantUsage>;
}

/** Counts of one namespace in the store, read now: what its own caps are compared with. */
export interface NamespaceUsagePort {
  countTopics(namespaceKey: string): Promise<number>;
  /** Consumer groups, all the namespace's topics together. */
  countGroups(namespaceKey: string): Promise<number>;
}

/** What large bodies hold in the store, read now. */
export interface LargeBodyUsagePort {
  /** Bytes of the namespace's large bodies (whole chunks, uploads under way included). */
  largeBodyBytes(namespaceKey: string): Promise<number>;
}

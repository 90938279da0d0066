// Admission of what a tenant stores, over all its deployments: topics, consumer groups, settings
// documents, bytes, and the number of live deployments. Each cap holds for the tenant summed
// over its deployments, beside the per-namespace caps; a new deployment past the bound is
// refused before anything of it is stored.
//
// Counts come from the usage port (one read of the store). A count under its cap is reused for
// TENANT_COUNT_REUSE_MS with this gateway's own admissions added, so a tenant creating topics by
// the thousand does not read the store for each; a refusal is always decided on a fresh read.
// Gateways creating at once may each see room for one more, so a cap can be overshot by what
// the others admit within that time (as with the per-namespace caps).
import { AppError } from "../../../errors.js";
import { admitTenantBytes } from "./byte-quotas.js";
import { tenantKeyOf } from "../tenant.js";
import type { TenantUsage, UsagePort } from "../usage.js";

export interface TenantCaps {
  /** Topics of a tenant (0: none). */
  readonly topics: number;
  /** Consumer groups of a tenant, all topics together (0: none). */
  readonly groups: number;
  /** Consumer settings documents of a tenant (0: none). */
  readonly settings: number;
  /** Live deployments (namespaces holding topics or settings) of a tenant (0: none). */
  readonly deployments: number;
  /** Bytes a tenant's topics may hold (0: none), by tenant key (per-team limits). */
  readonly bytes: (tenantKey: string) => number;
}

/** How long a count under its cap is reused (see above). */
export const TENANT_COUNT_REUSE_MS = 2000;
/** How stale the bytes a publish is checked against may be before they are read again. */
export const TENANT_BYTES_REFRESH_MS = 5000;
/** What a client refused a new deployment is told to wait: deployments end as topics go. */
export const DEPLOYMENT_RETRY_AFTER_SECONDS = 60;
/** Tenants whose usage is remembered (the least recently read forgotten first). */
const MAX_TENANTS = 10_000;

type Counted = "topics" | "groups" | "settings";

interface Known {
  topics: number;
  groups: number;
  settings: number;
  bytes: number;
  readonly deployments: Set<string>;
  /** When the read it came from began. */
  readonly at: number;
}

const LIMIT_NAMES = {
  topics: "topics",
  groups: "consumer groups",
  settings: "consumer settings",
} as const;

const LIMIT_CODES = {
  topics: "topic_limit_reached",
  groups: "group_limit_reached",
  settings: "settings_limit_reached",
} as const;

export class TenantAdmission {
  readonly #caps: TenantCaps;
  readonly #usage: UsagePort;
  readonly #now: () => number;
  readonly #known = new Map<string, Known>();
  readonly #reads = new Map<string, Promise<Known>>();

  constructor(caps: TenantCaps, usage: UsagePort, now: () => number) {
    this.#caps = caps;
    this.#usage = usage;
    this.#now = now;
  }

  get caps(): TenantCaps {
    return this.#caps;
  }

  /** Admits a new topic of the namespace, or throws the tenant's refusal. */
  admitTopic(namespaceKey: string): Promise<void> {
    return this.#admit(namespaceKey, "topics");
  }

  /** Admits a new consumer group of the namespace. */
  admitGroup(namespaceKey: string): Promise<void> {
    return this.#admit(namespaceKey, "groups");
  }

  /**
   * Admits a settings document of the namespace. At a cap, only a replacement of a document
   * that exists may be stored (`replaces` tells, with a current read).
   */
  async admitSettings(namespaceKey: string, replaces: () => Promise<boolean>): Promise<void> {
    try {
      await this.#admit(namespaceKey, "settings");
    } catch (err) {
      if (!(await replaces())) throw err;
    }
  }

  /**
   * Refuses a publish of `bytes` that would take the tenant past its byte cap (429
   * storage_quota_exceeded). Checked against what is known (no round trip), read again in the
   * background once older than TENANT_BYTES_REFRESH_MS; the tenant's first publish on this
   * gateway waits for the read.
   */
  admitBytes(namespaceKey: string, bytes: number): Promise<void> | undefined {
    const tenant = tenantKeyOf(namespaceKey);
    const limit = this.#caps.bytes(tenant);
    if (limit === 0) return undefined;
    const known = this.#known.get(tenant);
    if (!known) return this.#read(tenant).then((k) => checkBytes(k, bytes, limit));
    if (this.#now() - known.at > TENANT_BYTES_REFRESH_MS) {
      void this.#read(tenant).catch(() => undefined); // the next publish shows it
    }
    checkBytes(known, bytes, limit);
    return undefined;
  }

  /** Namespace keys of the tenant's live deployments (a read under its reuse time serves). */
  async deployments(namespaceKey: string): Promise<ReadonlySet<string>> {
    const tenant = tenantKeyOf(namespaceKey);
    let known = this.#known.get(tenant);
    if (!known || this.#now() - known.at >= TENANT_COUNT_REUSE_MS) known = await this.#read(tenant);
    return known.deployments;
  }

  /** Counts bytes this gateway stored until the next read includes them. */
  stored(namespaceKey: string, bytes: number): void {
    const known = this.#known.get(tenantKeyOf(namespaceKey));
    if (known) known.bytes += bytes;
  }

  async #admit(namespaceKey: string, kind: Counted): Promise<void> {
    if (this.#caps.deployments === 0 && this.#caps[kind] === 0) return; // nothing to read for
    const tenant = tenantKeyOf(namespaceKey);
    let known = this.#known.get(tenant);
    if (
      !known ||
      this.#now() - known.at >= TENANT_COUNT_REUSE_MS ||
      this.#refusal(known, namespaceKey, kind) !== null
    ) {
      known = await this.#read(tenant);
    }
    const refusal = this.#refusal(known, namespaceKey, kind);
    if (refusal) throw refusal;
    known[kind]++;
    known.deployments.add(namespaceKey);
  }

  /** Why the tenant may not have one more of `kind` in the namespace; null: it may. */
  #refusal(known: Known, namespaceKey: string, kind: Counted): AppError | null {
    const deployments = this.#caps.deployments;
    if (
      deployments > 0 &&
      !known.deployments.has(namespaceKey) &&
      known.deployments.size >= deployments
    ) {
      return new AppError("deployment_limit_reached", {
        retryAfterSeconds: DEPLOYMENT_RETRY_AFTER_SECONDS,
        extra: { limit: deployments },
      });
    }
    const cap = this.#caps[kind];
    if (cap > 0 && known[kind] >= cap) {
      return new AppError(LIMIT_CODES[kind], {
        message: `This tenant has as many ${LIMIT_NAMES[kind]} as the service allows, all its deployments together; remove unused ones or ask the operator for a higher limit.`,
        extra: { limit: cap, scope: "tenant" },
      });
    }
    return null;
  }

  /** A fresh read of the tenant's usage (one at a time per tenant), remembered. */
  #read(tenant: string): Promise<Known> {
    let reading = this.#reads.get(tenant);
    if (!reading) {
      const at = this.#now();
      reading = this.#usage
        .readTenant(tenant)
        .then((u) => {
          const known = fromUsage(u, at);
          this.#known.delete(tenant);
          if (this.#known.size >= MAX_TENANTS) this.#known.delete(this.#known.keys().next().value!);
          this.#known.set(tenant, known);
          return known;
        })
        .finally(() => this.#reads.delete(tenant));
      this.#reads.set(tenant, reading);
    }
    return reading;
  }
}

function fromUsage(u: TenantUsage, at: number): Known {
  return {
    topics: u.topics,
    groups: u.groups,
    settings: u.settings,
    bytes: u.bytes,
    deployments: new Set(u.deployments),
    at,
  };
}

function checkBytes(known: Known, bytes: number, limit: number): void {
  admitTenantBytes(known.bytes, bytes, limit);
}

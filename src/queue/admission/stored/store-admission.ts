// Admission of what a namespace and its tenant store: a new topic, consumer group or settings
// document is admitted by the namespace's caps (VQS_MAX_TOPICS_PER_NAMESPACE, ..._GROUPS_...,
// ..._SETTINGS_...) and then by the tenant's (tenant-admission.ts), or refused (403
// topic_limit_reached, group_limit_reached, settings_limit_reached; 429 deployment_limit_reached).
//
// The namespace's counts come from the usage port (one listing of its streams). A count under its
// cap is reused for NAMESPACE_COUNT_REUSE_MS with this gateway's own admissions added, so a
// namespace creating topics by the thousand (one per Workflow run) does not list its streams for
// each; a refusal is always decided on a fresh count. Creations racing through several gateways
// may each see room for one more, so a cap can be overshot by what the others create meanwhile.
import { AppError } from "../../../errors.js";
import type { TenantAdmission } from "./tenant-admission.js";
import type { NamespaceUsagePort } from "../usage.js";

export interface NamespaceCaps {
  /** Topics of a namespace (0: none). */
  readonly topics: number;
  /** Consumer groups of a namespace, all topics together (0: none). */
  readonly groups: number;
  /** Consumer settings documents of a namespace (0: none). */
  readonly settings: number;
}

/** How long a namespace's count under its cap is reused (see above). */
export const NAMESPACE_COUNT_REUSE_MS = 1000;
/** Namespaces whose counts are remembered (names are user input: bounded). */
const MAX_NAMESPACES = 10_000;

interface Seen {
  count: number;
  readonly at: number;
}

export class StoreAdmission {
  readonly #caps: NamespaceCaps;
  readonly #usage: NamespaceUsagePort;
  readonly #tenants: Pick<TenantAdmission, "admitTopic" | "admitGroup" | "admitSettings"> | null;
  readonly #now: () => number;
  readonly #topics = new Map<string, Seen>();
  readonly #groups = new Map<string, Seen>();

  constructor(
    caps: NamespaceCaps,
    usage: NamespaceUsagePort,
    tenants: Pick<TenantAdmission, "admitTopic" | "admitGroup" | "admitSettings"> | null,
    now: () => number,
  ) {
    this.#caps = caps;
    this.#usage = usage;
    this.#tenants = tenants;
    this.#now = now;
  }

  get caps(): NamespaceCaps {
    return this.#caps;
  }

  /** Admits a new topic of the namespace, or throws the namespace's or the tenant's refusal. */
  async admitTopic(namespaceKey: string): Promise<void> {
    await this.#admit(this.#topics, namespaceKey, this.#caps.topics, "topic_limit_reached", () =>
      this.#usage.countTopics(namespaceKey),
    );
    await this.#tenants?.admitTopic(namespaceKey);
  }

  /** Admits a new consumer group of the namespace. */
  async admitGroup(namespaceKey: string): Promise<void> {
    await this.#admit(this.#groups, namespaceKey, this.#caps.groups, "group_limit_reached", () =>
      this.#usage.countGroups(namespaceKey),
    );
    await this.#tenants?.admitGroup(namespaceKey);
  }

  /**
   * Admits a settings document of a namespace holding `count` of them (the settings store's
   * copy). At a cap only a replacement of a document that exists may be stored (`replaces`
   * tells, with a current read). Puts racing through several gateways can overshoot by their
   * number.
   */
  async admitSettings(
    namespaceKey: string,
    count: number,
    replaces: () => Promise<boolean>,
  ): Promise<void> {
    const max = this.#caps.settings;
    if (max > 0 && count >= max && !(await replaces())) {
      throw new AppError("settings_limit_reached");
    }
    await this.#tenants?.admitSettings(namespaceKey, replaces);
  }

  async #admit(
    counts: Map<string, Seen>,
    namespaceKey: string,
    cap: number,
    code: "topic_limit_reached" | "group_limit_reached",
    count: () => Promise<number>,
  ): Promise<void> {
    if (cap === 0) return;
    const seen = counts.get(namespaceKey);
    if (seen && this.#now() - seen.at < NAMESPACE_COUNT_REUSE_MS && seen.count < cap) {
      seen.count++;
      return;
    }
    const at = this.#now();
    const now = await count();
    if (now >= cap) {
      counts.delete(namespaceKey);
      throw new AppError(code, { extra: { limit: cap } });
    }
    if (counts.size >= MAX_NAMESPACES) counts.clear(); // bounded: one entry per namespace
    counts.set(namespaceKey, { count: now + 1, at });
  }
}

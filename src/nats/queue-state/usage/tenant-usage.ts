// The usage port of admission (src/queue/admission/usage.ts) on JetStream: one listing of the
// region's topic streams (their descriptions name the namespace) counts every tenant's topics,
// groups and bytes at once, and the settings bucket this gateway follows in memory counts its
// settings documents. A read under way is shared by every tenant that asks meanwhile, so a
// region listing runs at most once at a time per gateway, whatever the number of tenants asking.
// A namespace's own counts (its caps) come from a listing of its streams by subject.
import type { JetStreamManager } from "@nats-io/jetstream";
import { tenantKeyOf } from "../../../queue/admission/tenant.js";
import type { NamespaceUsagePort, TenantUsage, UsagePort } from "../../../queue/admission/usage.js";
import type { SettingsStore } from "../../../queue/settings/settings-store.js";
import { namespaceFilter } from "../../core/naming.js";

/** Subjects of every topic stream (`vqs.<namespace hash>.<topic hash>.>`). */
const TOPIC_STREAMS = "vqs.*.*.>";

interface Counts {
  topics: number;
  groups: number;
  bytes: number;
  settings: number;
  deployments: Set<string>;
}

const empty = (): Counts => ({
  topics: 0,
  groups: 0,
  bytes: 0,
  settings: 0,
  deployments: new Set(),
});

export class JetStreamUsage implements UsagePort, NamespaceUsagePort {
  readonly #jsm: JetStreamManager;
  readonly #region: string;
  readonly #settings: () => SettingsStore | null;
  #reading: Promise<Map<string, Counts>> | null = null;

  constructor(jsm: JetStreamManager, region: string, settings: () => SettingsStore | null) {
    this.#jsm = jsm;
    this.#region = region;
    this.#settings = settings;
  }

  async readTenant(tenantKey: string): Promise<TenantUsage> {
    const streams = await this.#readStreams();
    const counts = { ...(streams.get(tenantKey) ?? empty()) };
    counts.deployments = new Set(counts.deployments);
    for (const entry of this.#settings()?.entries() ?? []) {
      if (tenantKeyOf(entry.namespace.key) !== tenantKey) continue;
      counts.settings++;
      counts.deployments.add(entry.namespace.key);
    }
    return counts;
  }

  async countTopics(namespaceKey: string): Promise<number> {
    let topics = 0;
    const filter = namespaceFilter(this.#region, { key: namespaceKey });
    for await (const name of this.#jsm.streams.names(filter)) if (name) topics++;
    return topics;
  }

  async countGroups(namespaceKey: string): Promise<number> {
    let groups = 0;
    const filter = namespaceFilter(this.#region, { key: namespaceKey });
    for await (const info of this.#jsm.streams.list(filter)) groups += info.state.consumer_count;
    return groups;
  }

  #readStreams(): Promise<Map<string, Counts>> {
    this.#reading ??= (async () => {
      const byTenant = new Map<string, Counts>();
      try {
        for await (const s of this.#jsm.streams.list(TOPIC_STREAMS)) {
          const namespace = namespaceOf(s.config.description, this.#region);
          if (namespace === null) continue;
          const tenant = tenantKeyOf(namespace);
          let c = byTenant.get(tenant);
          if (!c) byTenant.set(tenant, (c = empty()));
          c.topics++;
          c.groups += s.state.consumer_count;
          c.bytes += s.state.bytes;
          c.deployments.add(namespace);
        }
      } finally {
        this.#reading = null;
      }
      return byTenant;
    })();
    return this.#reading;
  }
}

/** The namespace key a topic stream's description names, if it is this region's topic. */
function namespaceOf(description: string | undefined, region: string): string | null {
  if (description === undefined) return null;
  try {
    const d = JSON.parse(description) as { vqs?: unknown; region?: unknown; namespace?: unknown };
    return d.vqs === 1 && d.region === region && typeof d.namespace === "string"
      ? d.namespace
      : null;
  } catch {
    return null;
  }
}

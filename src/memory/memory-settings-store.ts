// The SettingsStore port (src/queue/settings/settings-store.ts) in memory, on an injected clock:
// one region's consumer settings for fast tests. The same in-memory index as the KV bucket's
// (SettingsIndex) answers what applies; test/contract/ runs one suite against both.
import type { Namespace } from "../queue/namespace.js";
import type { ConsumerSettings, SettingsEntry } from "../queue/settings/consumer-settings.js";
import { SettingsIndex } from "../queue/settings/settings-index.js";
import type { SettingsListener, SettingsStore } from "../queue/settings/settings-store.js";

export class MemorySettingsStore implements SettingsStore {
  readonly #now: () => number;
  readonly #index = new SettingsIndex();
  readonly #docs = new Map<string, SettingsEntry>();
  #revision = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  put(
    ns: Namespace,
    topicOrPattern: string,
    group: string,
    settings: ConsumerSettings,
  ): Promise<SettingsEntry> {
    const id = key(ns, topicOrPattern, group);
    const entry: SettingsEntry = {
      namespace: ns,
      topic: topicOrPattern,
      group,
      settings,
      updatedAt: new Date(this.#now()).toISOString(),
      revision: ++this.#revision,
    };
    this.#docs.set(id, entry);
    this.#index.upsert(id, entry);
    return Promise.resolve(entry);
  }

  get(ns: Namespace, topicOrPattern: string, group: string): Promise<SettingsEntry | null> {
    return Promise.resolve(this.#docs.get(key(ns, topicOrPattern, group)) ?? null);
  }

  delete(ns: Namespace, topicOrPattern: string, group: string): Promise<boolean> {
    const id = key(ns, topicOrPattern, group);
    if (!this.#docs.delete(id)) return Promise.resolve(false);
    this.#index.remove(id, ++this.#revision);
    return Promise.resolve(true);
  }

  list(ns: Namespace): SettingsEntry[] {
    return this.#index.list(ns);
  }

  count(ns: Namespace): number {
    return this.#index.count(ns);
  }

  effective(ns: Namespace, topic: string, group: string): ConsumerSettings | null {
    return this.#index.effective(ns, topic, group);
  }

  effectiveEntry(ns: Namespace, topic: string, group: string): SettingsEntry | null {
    return this.#index.effectiveEntry(ns, topic, group);
  }

  entries(): Iterable<SettingsEntry> {
    return this.#index.entries();
  }

  onChange(listener: SettingsListener): () => void {
    return this.#index.onChange(listener);
  }
}

const key = (ns: Namespace, topicOrPattern: string, group: string) =>
  JSON.stringify([ns.key, topicOrPattern, group]);

// Every settings document of the region, held in memory by each gateway and answering what
// applies to a (namespace, topic, group) without a round trip. The store feeds it: its own
// writes at once (read-your-writes on this gateway), everyone's through the watch of the
// bucket. Changes are ordered by store revision, so a late echo of an older state never
// undoes a newer one.
//
// Precedence (docs/architecture.md, "Consumer settings"): a topic's own document wins over
// every pattern; among the patterns that match, the longest prefix wins (the most specific,
// as with routes and longest-prefix matching elsewhere), and two patterns never tie, since
// equal prefixes are one document.
import type { Namespace } from "../namespace.js";
import type { ConsumerSettings, SettingsEntry } from "./consumer-settings.js";
import type { SettingsListener } from "./settings-store.js";
import { patternPrefix } from "./topic-pattern.js";

interface NamespaceDocs {
  readonly namespace: Namespace;
  /** topic -> group -> document. */
  readonly topics: Map<string, Map<string, SettingsEntry>>;
  /** group -> prefix -> document. */
  readonly patterns: Map<string, Map<string, SettingsEntry>>;
  size: number;
}

/** Removals made here whose delete marker the watch has not delivered yet (bounded). */
const MAX_PENDING_REMOVALS = 10_000;

/** A replacement of the whole index by a replay of the store (after a reconnect). */
export interface Replay {
  /** Ends the replay: documents it did not mention, and nobody changed meanwhile, are gone. */
  finish(): void;
  /** Abandons the replay (the watch failed before it ended); nothing is removed. */
  cancel(): void;
}

export class SettingsIndex {
  /** Store id (opaque, chosen by the store) -> document. */
  readonly #byId = new Map<string, SettingsEntry>();
  readonly #namespaces = new Map<string, NamespaceDocs>();
  /** id -> the revision a removal made here is newer than. */
  readonly #removedAfter = new Map<string, number>();
  readonly #listeners = new Set<SettingsListener>();
  readonly #onListenerError: (err: unknown) => void;
  /** Ids a replay in progress has heard of. */
  #replaySeen: Set<string> | null = null;

  constructor(onListenerError: (err: unknown) => void = () => undefined) {
    this.#onListenerError = onListenerError;
  }

  get size(): number {
    return this.#byId.size;
  }

  /** Applies a stored document unless this index knows a newer state; true when it changed. */
  upsert(id: string, entry: SettingsEntry): boolean {
    this.#replaySeen?.add(id);
    const current = this.#byId.get(id);
    if (current && current.revision >= entry.revision) return false;
    const removedAfter = this.#removedAfter.get(id);
    if (removedAfter !== undefined) {
      if (entry.revision <= removedAfter) return false;
      this.#removedAfter.delete(id);
    }
    if (current) this.#unlink(current);
    const stored = this.#link(entry);
    this.#byId.set(id, stored);
    this.#notify(stored, false);
    return true;
  }

  /** Applies a removal stored at `revision` (a delete marker); true when it changed. */
  remove(id: string, revision: number): boolean {
    this.#replaySeen?.add(id);
    const removedAfter = this.#removedAfter.get(id);
    if (removedAfter !== undefined && revision > removedAfter) this.#removedAfter.delete(id);
    const current = this.#byId.get(id);
    if (!current || current.revision > revision) return false;
    this.#drop(id, current);
    return true;
  }

  /**
   * Applies a removal made by this gateway, whose delete marker's revision is not known yet,
   * only that it is newer than `afterRevision` (the revision the store had when it removed).
   */
  removeLocal(id: string, afterRevision: number): void {
    this.#replaySeen?.add(id);
    if (this.#removedAfter.size >= MAX_PENDING_REMOVALS) this.#removedAfter.clear();
    this.#removedAfter.set(id, afterRevision);
    const current = this.#byId.get(id);
    if (current && current.revision <= afterRevision) this.#drop(id, current);
  }

  /** Starts replacing the index by a full replay of the store (see Replay). */
  beginReplay(): Replay {
    const seen = new Set<string>();
    this.#replaySeen = seen;
    const end = () => {
      if (this.#replaySeen === seen) this.#replaySeen = null;
    };
    return {
      finish: () => {
        if (this.#replaySeen !== seen) return;
        end();
        for (const [id, entry] of this.#byId) if (!seen.has(id)) this.#drop(id, entry);
      },
      cancel: end,
    };
  }

  effective(ns: Namespace, topic: string, group: string): ConsumerSettings | null {
    return this.effectiveEntry(ns, topic, group)?.settings ?? null;
  }

  effectiveEntry(ns: Namespace, topic: string, group: string): SettingsEntry | null {
    const docs = this.#namespaces.get(ns.key);
    if (!docs) return null;
    const own = docs.topics.get(topic)?.get(group);
    if (own) return own;
    const patterns = docs.patterns.get(group);
    if (!patterns) return null;
    // Whichever is fewer: the group's patterns, or the topic's prefixes (at most 255).
    if (patterns.size < topic.length) {
      let best: SettingsEntry | null = null;
      let bestLength = 0;
      for (const [prefix, entry] of patterns) {
        if (prefix.length > bestLength && topic.startsWith(prefix)) {
          best = entry;
          bestLength = prefix.length;
        }
      }
      return best;
    }
    for (let length = topic.length; length > 0; length--) {
      const entry = patterns.get(topic.slice(0, length));
      if (entry) return entry;
    }
    return null;
  }

  list(ns: Namespace): SettingsEntry[] {
    const docs = this.#namespaces.get(ns.key);
    if (!docs) return [];
    const out: SettingsEntry[] = [];
    for (const groups of docs.topics.values()) out.push(...groups.values());
    for (const prefixes of docs.patterns.values()) out.push(...prefixes.values());
    return out.sort((a, b) => compare(a.topic, b.topic) || compare(a.group, b.group));
  }

  count(ns: Namespace): number {
    return this.#namespaces.get(ns.key)?.size ?? 0;
  }

  entries(): Iterable<SettingsEntry> {
    return this.#byId.values();
  }

  onChange(listener: SettingsListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #drop(id: string, entry: SettingsEntry): void {
    this.#byId.delete(id);
    this.#unlink(entry);
    this.#notify(entry, true);
  }

  /** Files the entry under its namespace (sharing one Namespace object per namespace). */
  #link(entry: SettingsEntry): SettingsEntry {
    let docs = this.#namespaces.get(entry.namespace.key);
    if (!docs) {
      docs = { namespace: entry.namespace, topics: new Map(), patterns: new Map(), size: 0 };
      this.#namespaces.set(entry.namespace.key, docs);
    }
    const stored =
      entry.namespace === docs.namespace ? entry : { ...entry, namespace: docs.namespace };
    const [outer, inner, innerKey] = slot(docs, entry);
    let map = outer.get(inner);
    if (!map) outer.set(inner, (map = new Map<string, SettingsEntry>()));
    map.set(innerKey, stored);
    docs.size++;
    return stored;
  }

  #unlink(entry: SettingsEntry): void {
    const docs = this.#namespaces.get(entry.namespace.key);
    if (!docs) return;
    const [outer, inner, innerKey] = slot(docs, entry);
    const map = outer.get(inner);
    if (!map?.delete(innerKey)) return;
    if (map.size === 0) outer.delete(inner);
    if (--docs.size === 0) this.#namespaces.delete(entry.namespace.key);
  }

  #notify(entry: SettingsEntry, deleted: boolean): void {
    for (const listener of this.#listeners) {
      try {
        listener(entry, deleted);
      } catch (err) {
        this.#onListenerError(err);
      }
    }
  }
}

/** Where an entry is filed: topics by topic then group, patterns by group then prefix. */
function slot(
  docs: NamespaceDocs,
  entry: SettingsEntry,
): [Map<string, Map<string, SettingsEntry>>, string, string] {
  const prefix = patternPrefix(entry.topic);
  return prefix === null
    ? [docs.topics, entry.topic, entry.group]
    : [docs.patterns, entry.group, prefix];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

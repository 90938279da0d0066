// The settings port: what the domain (and the pusher) needs from wherever consumer settings are
// kept, in queue vocabulary. src/nats/settings/ implements it on a KV bucket that every gateway
// follows in memory.
import type { Namespace } from "../namespace.js";
import type { ConsumerSettings, SettingsEntry } from "./consumer-settings.js";

export type { ConsumerSettings, SettingsEntry } from "./consumer-settings.js";

export type SettingsListener = (entry: SettingsEntry, deleted: boolean) => void;

export interface SettingsStore {
  /** Stores (replaces) the document of a topic or `prefix*` pattern and group. */
  put(
    ns: Namespace,
    topicOrPattern: string,
    group: string,
    settings: ConsumerSettings,
  ): Promise<SettingsEntry>;
  /** The exact document, read from the store (current, not this gateway's copy); null: none. */
  get(ns: Namespace, topicOrPattern: string, group: string): Promise<SettingsEntry | null>;
  /** Removes the document; false when there was none. */
  delete(ns: Namespace, topicOrPattern: string, group: string): Promise<boolean>;
  /** Every document of the namespace, from memory, ordered by topic then group. */
  list(ns: Namespace): SettingsEntry[];
  /** How many documents the namespace has (from memory). */
  count(ns: Namespace): number;
  /**
   * What applies to a concrete topic's group, from memory (no round trip): the topic's own
   * document, else the matching pattern with the longest prefix; null: none (plain polling).
   */
  effective(ns: Namespace, topic: string, group: string): ConsumerSettings | null;
  /** The document `effective` took the settings from. */
  effectiveEntry(ns: Namespace, topic: string, group: string): SettingsEntry | null;
  /** Every document of every namespace (what the pusher walks). */
  entries(): Iterable<SettingsEntry>;
  /** Told of every change this gateway learns of, its own and other gateways'. */
  onChange(listener: SettingsListener): () => void;
}

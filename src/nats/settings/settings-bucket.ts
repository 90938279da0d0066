// Consumer settings on JetStream: one KV bucket per region, followed by every gateway.
//
// Keys are hashes only (naming.ts, settingsKey); a value is JSON holding the document's whole
// identity (namespace, topic or pattern, group) with the settings and when they were stored,
// so a watcher rebuilds everything from values alone. Reads that decide (GET, DELETE) go to
// the stream leader (`allow_direct: false`), never to a replica that may lag.
//
// Every gateway keeps all documents in memory (SettingsIndex) for `effective()` without a
// round trip: it reads them all before serving (up to 5 s) and follows the bucket with a
// watch. After a reconnect (the watch may have missed changes, or its server-side consumer
// may be gone) or a failure, a new watch replays the bucket (the last value of every key,
// deletions included) and the replay replaces the index: nothing missed while away survives
// it, and a key the replay does not mention (a server that lost its data) is gone.
import type { JetStreamClient } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";
import { makeNamespace, type Namespace } from "../../queue/namespace.js";
import type { ConsumerSettings, SettingsEntry } from "../../queue/settings/consumer-settings.js";
import { SettingsIndex } from "../../queue/settings/settings-index.js";
import type { SettingsListener, SettingsStore } from "../../queue/settings/settings-store.js";
import { parseTopicTarget } from "../../queue/settings/topic-pattern.js";
import { validateSettings } from "../../queue/settings/validate.js";
import { isApiError, isNoResponders, toStorageError } from "../core/errors.js";
import { FollowedBucket } from "../core/followed-bucket.js";
import { settingsKey } from "../core/naming.js";

export const SETTINGS_BUCKET = "VQS_SETTINGS";

export interface SettingsBucketOptions {
  readonly region: string;
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly log: Logger;
  /** Times each store call (the JetStream operation histogram). */
  readonly observe?: (operation: string, seconds: number) => void;
  /** How long a starting gateway waits for the documents before serving anyway. */
  readonly syncTimeoutMs?: number;
}

/** Largest stored document (a full one is well under 3 KiB: the URL is at most 2 KiB). */
const MAX_VALUE_BYTES = 16 * 1024;
/** JetStream's "stream not found". */
const STREAM_NOT_FOUND = 10059;

/** The stored form of a document. */
interface StoredValue {
  v: 1;
  namespace: { team: string; project: string; environment: string; deployment: string | null };
  topic: string;
  group: string;
  settings: ConsumerSettings;
  updatedAt: string;
}

export class SettingsBucket implements SettingsStore {
  readonly #js: JetStreamClient;
  readonly #o: SettingsBucketOptions;
  readonly #index: SettingsIndex;
  readonly #followed: FollowedBucket;
  #kv: KV | null = null;

  constructor(nc: NatsConnection, js: JetStreamClient, o: SettingsBucketOptions) {
    this.#js = js;
    this.#o = o;
    this.#index = new SettingsIndex((err) =>
      o.log.error({ err }, "a settings change listener failed"),
    );
    this.#followed = new FollowedBucket(nc, {
      what: "consumer settings",
      log: o.log,
      open: async () => (this.#kv = await this.#open()),
      apply: (e) => this.#apply(e),
      beginReplay: () => this.#index.beginReplay(),
      ...(o.syncTimeoutMs !== undefined ? { syncTimeoutMs: o.syncTimeoutMs } : {}),
    });
  }

  /** Opens the bucket and starts following it; resolves once the documents are read. */
  start(): Promise<void> {
    return this.#followed.start();
  }

  /** Stops following the bucket (at once, even while waiting to try again). */
  stop(): void {
    this.#followed.stop();
  }

  async put(
    ns: Namespace,
    topicOrPattern: string,
    group: string,
    settings: ConsumerSettings,
  ): Promise<SettingsEntry> {
    const value: StoredValue = {
      v: 1,
      namespace: {
        team: ns.team,
        project: ns.project,
        environment: ns.environment,
        deployment: ns.deployment,
      },
      topic: topicOrPattern,
      group,
      settings,
      updatedAt: new Date().toISOString(),
    };
    const key = this.#key(ns, topicOrPattern, group);
    const revision = await this.#op("settings_put", (kv) => kv.put(key, JSON.stringify(value)));
    const entry: SettingsEntry = {
      namespace: ns,
      topic: topicOrPattern,
      group,
      settings,
      updatedAt: value.updatedAt,
      revision,
    };
    this.#index.upsert(key, entry);
    return entry;
  }

  async get(ns: Namespace, topicOrPattern: string, group: string): Promise<SettingsEntry | null> {
    const key = this.#key(ns, topicOrPattern, group);
    const e = await this.#op("settings_get", (kv) => kv.get(key));
    if (!e) return null;
    if (e.operation !== "PUT") {
      this.#index.remove(key, e.revision);
      return null;
    }
    const entry = this.#decode(e);
    if (
      !entry ||
      entry.namespace.key !== ns.key ||
      entry.topic !== topicOrPattern ||
      entry.group !== group
    ) {
      // A different identity under this key: a hash collision (or a corrupt value).
      throw new Error(`settings document ${key} does not hold what its key names`);
    }
    this.#index.upsert(key, entry);
    return entry;
  }

  async delete(ns: Namespace, topicOrPattern: string, group: string): Promise<boolean> {
    const key = this.#key(ns, topicOrPattern, group);
    const e = await this.#op("settings_get", (kv) => kv.get(key));
    if (!e || e.operation !== "PUT") {
      if (e) this.#index.remove(key, e.revision);
      return false;
    }
    await this.#op("settings_delete", (kv) => kv.delete(key));
    this.#index.removeLocal(key, e.revision);
    return true;
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

  /**
   * Runs a store call on the bucket, timed, its failure turned into 503 storage_unavailable. A
   * bucket gone from under us (a NATS server that lost its data) is made again, once.
   */
  async #op<T>(operation: string, fn: (kv: KV) => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      if (!this.#kv) throw new Error("settings used before start()");
      try {
        return await fn(this.#kv);
      } catch (err) {
        if (!isNoResponders(err) && !isApiError(err, STREAM_NOT_FOUND)) throw err;
        this.#kv = await this.#open();
        return await fn(this.#kv);
      }
    } catch (err) {
      throw toStorageError(err);
    } finally {
      this.#o.observe?.(operation, (performance.now() - started) / 1000);
    }
  }

  /** The bucket, made when missing (STREAM.INFO; STREAM.CREATE the first time). */
  #open(): Promise<KV> {
    return new Kvm(this.#js).create(SETTINGS_BUCKET, {
      history: 1,
      replicas: this.#o.replicas,
      storage: StorageType.File,
      allow_direct: false,
      maxValueSize: MAX_VALUE_BYTES,
      description: "vqs consumer group settings",
      timeout: this.#o.timeoutMs,
    });
  }

  #key(ns: Namespace, topicOrPattern: string, group: string): string {
    return settingsKey(this.#o.region, ns.key, topicOrPattern, group);
  }

  #apply(e: KvEntry): void {
    if (e.operation !== "PUT") {
      this.#index.remove(e.key, e.revision);
      return;
    }
    const entry = this.#decode(e);
    if (entry && this.#key(entry.namespace, entry.topic, entry.group) === e.key) {
      this.#index.upsert(e.key, entry);
    } else {
      this.#o.log.warn({ key: e.key }, "ignoring a settings document that does not decode");
    }
  }

  /**
   * A stored value back to a document. Fields this version does not know (written by a newer
   * gateway during an upgrade) are left out rather than refusing the document; a value that is
   * not a document at all gives null.
   */
  #decode(e: KvEntry): SettingsEntry | null {
    try {
      const v = e.json<Partial<StoredValue>>();
      const n = v.namespace;
      if (
        v.v !== 1 ||
        !n ||
        typeof n.team !== "string" ||
        typeof n.project !== "string" ||
        typeof n.environment !== "string" ||
        (n.deployment !== null && typeof n.deployment !== "string") ||
        typeof v.topic !== "string" ||
        typeof v.group !== "string" ||
        typeof v.updatedAt !== "string"
      ) {
        return null;
      }
      const s = (v.settings ?? {}) as Partial<Record<keyof ConsumerSettings, unknown>>;
      const settings = validateSettings(
        {
          push: known(s.push, ["url", "maxConcurrency", "timeoutSeconds", "autoAck"]),
          retry: known(s.retry, ["afterSeconds", "initialDelaySeconds", "maxBackoffSeconds"]),
          deadLetter: known(s.deadLetter, ["topic", "maxDeliveries"]),
          flowControl: known(s.flowControl, ["key", "concurrency", "rate", "ordered"]),
        },
        parseTopicTarget(v.topic),
      );
      return {
        namespace: makeNamespace(n.team, n.project, n.environment, n.deployment),
        topic: v.topic,
        group: v.group,
        settings,
        updatedAt: v.updatedAt,
        revision: e.revision,
      };
    } catch {
      return null;
    }
  }
}

/** The named fields of an object (null and other values as they are). */
function known(v: unknown, fields: readonly string[]): unknown {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const f of fields) if (f in v) out[f] = (v as Record<string, unknown>)[f];
  return out;
}

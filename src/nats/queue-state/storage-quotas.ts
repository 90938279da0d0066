// Storage quotas per topic and per namespace, checked by the gateway before a publish against
// usage read from stream info (one listing of the namespace's streams) at most every refreshMs,
// plus what this gateway stored since: a publish costs no round trip. Gateways together can
// overshoot a limit by what the others store within one refresh. A hard per-topic limit is
// JetStream's own (max_bytes, topology.ts, opt-in since JetStream reserves it). See
// docs/architecture.md, "Storage quotas", for why this and not one NATS account per namespace.
import type { JetStreamManager } from "@nats-io/jetstream";
import { AppError } from "../../errors.js";

export interface StorageQuotaOptions {
  /** Bytes one topic may store; 0: no limit. */
  readonly topicMaxBytes: number;
  /** Bytes one namespace may store; 0: no limit. */
  readonly namespaceMaxBytes: number;
  /** Per-team namespace limits instead of namespaceMaxBytes. */
  readonly teams: ReadonlyMap<string, number>;
  /** How stale a namespace's usage may be before a publish reads it again (in the background). */
  readonly refreshMs: number;
}

/** What a client over a quota is told to wait: space frees as messages expire. */
export const QUOTA_RETRY_AFTER_SECONDS = 30;

/** Namespaces whose usage is remembered (the least recently refreshed forgotten first). */
const MAX_NAMESPACES = 10_000;

interface Usage {
  /** Bytes of the namespace's streams at the last read, in all and per stream. */
  bytes: number;
  streams: Map<string, number>;
  /** Bytes this gateway stored since that read, in all and per stream. */
  since: number;
  streamsSince: Map<string, number>;
  at: number;
  reading: Promise<void> | null;
}

export class StorageQuotas {
  readonly #jsm: JetStreamManager;
  readonly #o: StorageQuotaOptions;
  readonly #usage = new Map<string, Usage>();

  constructor(jsm: JetStreamManager, opts: StorageQuotaOptions) {
    this.#jsm = jsm;
    this.#o = opts;
  }

  /** The per-topic byte limit (0: none). */
  get topicLimit(): number {
    return this.#o.topicMaxBytes;
  }

  /** The namespace's byte limit (0: none). */
  namespaceLimit(namespaceKey: string): number {
    const team = teamOf(namespaceKey);
    return (team !== null ? this.#o.teams.get(team) : undefined) ?? this.#o.namespaceMaxBytes;
  }

  /**
   * Refuses a publish of `bytes` to `stream` that would take its topic past the topic limit
   * (429 topic_full) or its namespace past the namespace limit (429 storage_quota_exceeded).
   * The first publish of a namespace on this gateway reads its usage; later ones use what is
   * known and refresh it in the background once it is older than refreshMs.
   */
  async admit(namespaceKey: string, filter: string, stream: string, bytes: number): Promise<void> {
    const limit = this.namespaceLimit(namespaceKey);
    const topicLimit = this.#o.topicMaxBytes;
    if (limit === 0 && topicLimit === 0) return;
    let u = this.#usage.get(namespaceKey);
    if (!u) {
      u = { bytes: 0, streams: new Map(), since: 0, streamsSince: new Map(), at: 0, reading: null };
      if (this.#usage.size >= MAX_NAMESPACES) this.#usage.delete(this.#usage.keys().next().value!);
      this.#usage.set(namespaceKey, u);
      await this.#refresh(u, filter);
    } else if (Date.now() - u.at > this.#o.refreshMs) {
      void this.#refresh(u, filter).catch(() => undefined); // the publish itself shows the fault
    }
    const topicUsed = (u.streams.get(stream) ?? 0) + (u.streamsSince.get(stream) ?? 0);
    if (topicLimit > 0 && topicUsed + bytes > topicLimit) {
      throw new AppError("topic_full", {
        retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS,
        extra: { limitBytes: topicLimit, usedBytes: topicUsed },
      });
    }
    if (limit > 0 && u.bytes + u.since + bytes > limit) {
      throw new AppError("storage_quota_exceeded", {
        retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS,
        extra: { limitBytes: limit, usedBytes: u.bytes + u.since },
      });
    }
  }

  /** Counts a stored message until the next read of the namespace's usage includes it. */
  stored(namespaceKey: string, stream: string, bytes: number): void {
    const u = this.#usage.get(namespaceKey);
    if (!u) return;
    u.since += bytes;
    u.streamsSince.set(stream, (u.streamsSince.get(stream) ?? 0) + bytes);
  }

  /** Bytes the namespace's streams hold now, per stream (one listing of its streams). */
  async read(filter: string): Promise<Map<string, number>> {
    const streams = new Map<string, number>();
    for await (const s of this.#jsm.streams.list(filter)) streams.set(s.config.name, s.state.bytes);
    return streams;
  }

  #refresh(u: Usage, filter: string): Promise<void> {
    u.reading ??= (async () => {
      const started = Date.now();
      try {
        const streams = await this.read(filter);
        u.streams = streams;
        u.bytes = 0;
        for (const b of streams.values()) u.bytes += b;
        u.since = 0;
        u.streamsSince.clear();
        u.at = started;
      } finally {
        u.reading = null;
      }
    })();
    return u.reading;
  }
}

/** The team of a namespace key (its canonical JSON, see src/queue/namespace.ts). */
function teamOf(namespaceKey: string): string | null {
  try {
    const parts = JSON.parse(namespaceKey) as unknown;
    return Array.isArray(parts) && typeof parts[0] === "string" ? parts[0] : null;
  } catch {
    return null;
  }
}

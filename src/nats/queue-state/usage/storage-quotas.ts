// The bytes behind the storage quotas per topic and per namespace, kept for the check before a
// publish (admission decides: src/queue/admission/stored/byte-quotas.ts): usage read from stream info
// (one listing of the namespace's streams, and its large bodies' chunks in the body store) at
// most every refreshMs, plus what this gateway stored since: a publish costs no round trip. A
// large body is counted as it streams in (`upload`). Gateways together can overshoot a limit by
// what the others store within one refresh. A hard per-topic limit is JetStream's own
// (max_bytes, topology.ts, opt-in since JetStream reserves it). See docs/architecture.md,
// "Admission" ("Why not one NATS account per namespace").
import { JetStreamApiCodes, type JetStreamManager } from "@nats-io/jetstream";
import { admitNamespaceBytes } from "../../../queue/admission/stored/byte-quotas.js";
import type { UploadQuota } from "../../../queue/broker.js";
import { isApiError } from "../../core/errors.js";
import { BODY_STREAM, bodyNamespaceFilter } from "../../core/naming.js";

export interface StorageQuotaOptions {
  /** Bytes one topic may store; 0: no limit. */
  readonly topicMaxBytes: number;
  /** Bytes one namespace may store; 0: no limit. */
  readonly namespaceMaxBytes: number;
  /** Per-team namespace limits instead of namespaceMaxBytes. */
  readonly teams: ReadonlyMap<string, number>;
  /** How stale a namespace's usage may be before a publish reads it again (in the background). */
  readonly refreshMs: number;
  /** The region (names the namespace's large bodies in the body store). */
  readonly region: string;
  /** Bytes of one large-body chunk; 0: no body store (large bodies are not counted). */
  readonly bodyChunkBytes: number;
}

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
  /** Large bodies being written here; their bytes count with `counted` of them in the read. */
  uploads: Set<Upload>;
  /** The namespace's byte limit (`namespaceLimit`: the settings do not change while running). */
  readonly limit: number;
}

interface Upload {
  readonly stream: string;
  written: number;
  /** What of `written` the last read of the namespace's usage already saw (its chunks). */
  counted: number;
  /** `written` when the read under way began. */
  atRead: number;
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
  admit(
    namespaceKey: string,
    filter: string,
    stream: string,
    bytes: number,
  ): Promise<void> | undefined {
    // A namespace already known is checked at once: no promise (nor a team's JSON) per publish.
    const known = this.#usage.get(namespaceKey);
    // No limit applies (nothing to read): at once too.
    if (!known && this.#o.topicMaxBytes === 0 && this.namespaceLimit(namespaceKey) === 0) {
      return undefined;
    }
    if (known) {
      this.#refreshIfStale(known, namespaceKey, filter);
      this.#check(known, stream, bytes);
      return undefined;
    }
    return this.#usageOf(namespaceKey, filter).then((u) => {
      if (u) this.#check(u, stream, bytes);
    });
  }

  /**
   * Starts counting a large body written to `stream`: refused at once (nothing read) when its
   * declared length has no room, and by `add` as soon as the bytes it brought have none.
   */
  async upload(
    namespaceKey: string,
    filter: string,
    stream: string,
    declaredLength: number | null,
  ): Promise<UploadQuota> {
    const u = await this.#usageOf(namespaceKey, filter);
    if (!u) return { add: () => undefined, end: () => undefined };
    this.#check(u, stream, declaredLength ?? 0);
    const up: Upload = { stream, written: 0, counted: 0, atRead: 0 };
    u.uploads.add(up);
    return {
      add: (n) => {
        up.written += n;
        // Its own bytes are in the usage already (uploading); only the room is looked at.
        this.#check(u, stream, 0);
      },
      end: (stored) => {
        if (!u.uploads.delete(up)) return;
        if (stored) this.stored(namespaceKey, stream, up.written - up.counted);
      },
    };
  }

  /** The namespace's usage, read first if this gateway has none; null: no limit applies. */
  async #usageOf(namespaceKey: string, filter: string): Promise<Usage | null> {
    const limit = this.namespaceLimit(namespaceKey);
    if (limit === 0 && this.#o.topicMaxBytes === 0) return null;
    let u = this.#usage.get(namespaceKey);
    if (!u) {
      u = {
        bytes: 0,
        streams: new Map(),
        since: 0,
        streamsSince: new Map(),
        at: 0,
        reading: null,
        uploads: new Set(),
        limit,
      };
      if (this.#usage.size >= MAX_NAMESPACES) this.#usage.delete(this.#usage.keys().next().value!);
      this.#usage.set(namespaceKey, u);
      await this.#refresh(u, namespaceKey, filter);
    } else this.#refreshIfStale(u, namespaceKey, filter);
    return u;
  }

  #refreshIfStale(u: Usage, namespaceKey: string, filter: string): void {
    if (Date.now() - u.at > this.#o.refreshMs) {
      void this.#refresh(u, namespaceKey, filter).catch(() => undefined); // the publish shows it
    }
  }

  #check(u: Usage, stream: string, bytes: number): void {
    const topicLimit = this.#o.topicMaxBytes;
    let uploading = 0;
    let topicUploading = 0;
    for (const up of u.uploads) {
      uploading += up.written - up.counted;
      if (up.stream === stream) topicUploading += up.written - up.counted;
    }
    admitNamespaceBytes(
      {
        topicUsed:
          (u.streams.get(stream) ?? 0) + (u.streamsSince.get(stream) ?? 0) + topicUploading,
        topicLimit,
        namespaceUsed: u.bytes + u.since + uploading,
        namespaceLimit: u.limit,
      },
      bytes,
    );
  }

  /** Counts a stored message until the next read of the namespace's usage includes it. */
  stored(namespaceKey: string, stream: string, bytes: number): void {
    const u = this.#usage.get(namespaceKey);
    if (!u) return;
    u.since += bytes;
    u.streamsSince.set(stream, (u.streamsSince.get(stream) ?? 0) + bytes);
  }

  /**
   * Bytes the namespace holds now per topic stream: its streams (one listing) plus its large
   * bodies in the body store (one stream info by subject filter, counted in whole chunks: at
   * most a chunk per body more than they hold).
   */
  async read(filter: string, namespaceKey?: string): Promise<Map<string, number>> {
    const streams = new Map<string, number>();
    const [, bodies] = await Promise.all([
      (async () => {
        for await (const s of this.#jsm.streams.list(filter)) {
          streams.set(s.config.name, s.state.bytes);
        }
      })(),
      namespaceKey !== undefined ? this.#readBodies(namespaceKey) : null,
    ]);
    for (const [stream, bytes] of bodies ?? []) {
      streams.set(stream, (streams.get(stream) ?? 0) + bytes);
    }
    return streams;
  }

  /** Bytes of the namespace's large bodies per topic stream (`vqs._body.<ns>.<topic>.<id>`). */
  async #readBodies(namespaceKey: string): Promise<Map<string, number>> {
    const bodies = new Map<string, number>();
    const filter = bodyNamespaceFilter(this.#o.region, { key: namespaceKey });
    for (const [subject, chunks] of await this.#bodyChunks(filter)) {
      const stream = `VQS_${subject.split(".")[3] ?? ""}`;
      bodies.set(stream, (bodies.get(stream) ?? 0) + chunks * this.#o.bodyChunkBytes);
    }
    return bodies;
  }

  /** Bytes of the namespace's large bodies, as its quotas count them (whole chunks). */
  async largeBodyBytes(namespaceKey: string): Promise<number> {
    let bytes = 0;
    for (const b of (await this.#readBodies(namespaceKey)).values()) bytes += b;
    return bytes;
  }

  /** Bytes of every namespace's large bodies in one read, by namespace key (of those given). */
  async largeBodyBytesOf(namespaceKeys: readonly string[]): Promise<Map<string, number>> {
    const byToken = new Map<string, string>();
    for (const key of namespaceKeys) {
      byToken.set(bodyNamespaceFilter(this.#o.region, { key }).split(".")[2]!, key);
    }
    const out = new Map<string, number>();
    if (byToken.size === 0) return out;
    for (const [subject, chunks] of await this.#bodyChunks("vqs._body.>")) {
      const key = byToken.get(subject.split(".")[2] ?? "");
      if (key !== undefined) out.set(key, (out.get(key) ?? 0) + chunks * this.#o.bodyChunkBytes);
    }
    return out;
  }

  /** Chunks per body subject under `filter`; none without a body store. */
  async #bodyChunks(filter: string): Promise<[string, number][]> {
    if (this.#o.bodyChunkBytes === 0) return [];
    try {
      const info = await this.#jsm.streams.info(BODY_STREAM, { subjects_filter: filter });
      return Object.entries(info.state.subjects ?? {});
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return [];
      throw err;
    }
  }

  #refresh(u: Usage, namespaceKey: string, filter: string): Promise<void> {
    u.reading ??= (async () => {
      const started = Date.now();
      // Chunks of uploads under way written before the read began are in what it finds.
      for (const up of u.uploads) up.atRead = up.written;
      try {
        const streams = await this.read(filter, namespaceKey);
        u.streams = streams;
        u.bytes = 0;
        for (const b of streams.values()) u.bytes += b;
        u.since = 0;
        u.streamsSince.clear();
        u.at = started;
        for (const up of u.uploads) up.counted = Math.max(up.counted, up.atRead);
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

// The BodyStore port on JetStream: one stream VQS_BODIES per region, each body a run of chunk
// messages on its own subject, every chunk with a per-message TTL of its message's retention
// counted from the latest its message may be published (so a body expires with its message,
// however long its upload took). Needs nats-server 2.11+ (per-message TTL, batch Direct
// Get); on older servers large bodies are refused with the reason. See docs/architecture.md,
// "Large bodies".
import {
  DiscardPolicy,
  JetStreamApiCodes,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StoredMsg,
  type StreamConfig,
} from "@nats-io/jetstream";
import { randomBytes } from "node:crypto";
import { AppError, isAppError } from "../../errors.js";
import {
  copyBody,
  type BodyRef,
  type BodyStore,
  type BodyWriteOptions,
  type ByteSource,
  type WrittenBody,
} from "../../queue/bodies.js";
import { namespaceLabel, type TopicAddress } from "../../queue/namespace.js";
import type { Requests } from "../core/requests.js";
import { PubAckError } from "../core/requests.js";
import { isApiError, isNothingFound, toStorageError } from "../core/errors.js";
import {
  BODY_STREAM,
  BODY_SUBJECTS,
  bodyNamespaceFilter,
  bodyTopicPrefix,
} from "../core/naming.js";
import { IngestBudget } from "./ingest-budget.js";
import { LargeBodyShare } from "../../queue/admission/stored/large-body-share.js";
import {
  COMMIT_HEADER,
  NAMESPACE_HEADER,
  readChunks,
  readHead,
  writeChunks,
} from "./body-chunks.js";
import { OrphanSweep, type SweepResult } from "./orphan-sweep.js";
import { headers } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";

export interface JetStreamBodiesOptions {
  readonly jsm: JetStreamManager;
  readonly requests: Requests;
  readonly region: string;
  readonly replicas: number;
  /** Null: large bodies are refused, with this reason. */
  readonly unsupportedReason: string | null;
  readonly chunkBytes: number;
  /** Chunk publishes in flight per body written. */
  readonly window: number;
  /**
   * Chunks asked for or held per body read, not yet handed over: smaller than the write window,
   * since a read's chunks are what a download holds (docs/architecture.md, "Reads").
   */
  readonly readWindow: number;
  /** The body stream's `max_age`: the longest retention plus the TTL margin. */
  readonly maxAgeMs: number;
  /** The whole store's byte limit (`max_bytes`); 0: none. */
  readonly maxStoreBytes: number;
  /** What one namespace, and one tenant, may store; 0: no share. */
  readonly namespaceShareBytes: number;
  /** Namespace keys of a tenant's live deployments, by a namespace key of the tenant. */
  readonly tenantDeployments: (namespaceKey: string) => Promise<ReadonlySet<string>>;
  /** Bytes per second this gateway takes in, all uploads together; 0: any. */
  readonly ingestBytesPerSecond: number;
  readonly requestTimeoutMs: number;
  /** An uncommitted body is an orphan once its last chunk is this old and no message has it. */
  readonly orphanGraceMs: number;
  /**
   * A body outlives its message's retention by this much (its chunks' TTL), so a read that began
   * just before the message expired still finds every chunk.
   */
  readonly ttlMarginSeconds: number;
  /**
   * The minimum upload rate (minUploadBytesPerSecond, over its window): what bounds how
   * long an upload may last, which its chunks' TTL must cover (`uploadBoundMs`).
   */
  readonly minUploadBytesPerSecond: number;
  readonly uploadWindowSeconds: number;
  /** How often the sweep runs (orphans, usage per namespace); 0: only when asked. */
  readonly sweepIntervalMs: number;
  readonly now: () => number;
  readonly log: Pick<Logger, "warn" | "error">;
  /** Bytes moved in ("in") or out ("out") of the store. */
  readonly observeBytes: (direction: "in" | "out", n: number) => void;
  /** Chunks asked of the store or held for readers and not yet handed over: a change. */
  readonly observeReadAhead?: (chunks: number) => void;
}

/** The upload watchdog's sampling interval at most (src/http/plugins/upload-watchdog.ts). */
const WATCHDOG_SAMPLE_MS = 5_000;
/**
 * The longest an upload may last, from its first chunk to its message's publish, whatever the
 * minimum rate: chunks live this much longer than their message at most (the body stream's
 * `max_age` has room for it).
 */
export const MAX_UPLOAD_MS = 3_600_000;

/**
 * How long the upload of a body of `bytes` may last, from its first chunk to its message's
 * publish: what the minimum upload rate allows (the watchdog wants each window's share, so one
 * window and a sampling interval more), then the last chunks' acknowledgements (a request
 * timeout); at most `MAX_UPLOAD_MS`.
 */
export function uploadBoundMs(
  bytes: number,
  rate: { readonly minBytesPerSecond: number; readonly windowSeconds: number },
  requestTimeoutMs: number,
): number {
  const atRate = Math.ceil((bytes / Math.max(1, rate.minBytesPerSecond)) * 1000);
  const slack = rate.windowSeconds * 1000 + WATCHDOG_SAMPLE_MS + requestTimeoutMs;
  return Math.min(MAX_UPLOAD_MS, atRate + slack);
}

/** JetStream's "maximum bytes exceeded" / "insufficient resources" answers to a publish. */
const STORE_FULL_CODES = new Set([10047, 10054]);
/** JetStream's answer to a stream whose `max_bytes` is more than the servers can reserve. */
const INSUFFICIENT_RESOURCES = 10047;
/** The operator is told again at most this often that the store cannot be created. */
const UNAVAILABLE_LOG_MS = 60_000;

export class JetStreamBodies implements BodyStore {
  readonly unsupportedReason: string | null;
  readonly #o: JetStreamBodiesOptions;
  readonly #sweep: OrphanSweep;
  readonly #budget: IngestBudget;
  readonly #share: LargeBodyShare;
  #ready: Promise<void> | null = null;
  #sweeping: Promise<SweepResult> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #unavailableLoggedAt = -Infinity;
  /** What the last sweep found stored per namespace. */
  #usage = new Map<string, number>();

  constructor(o: JetStreamBodiesOptions) {
    this.#o = o;
    this.unsupportedReason = o.unsupportedReason;
    this.#budget = new IngestBudget(o.ingestBytesPerSecond);
    this.#share = new LargeBodyShare({
      shareBytes: o.namespaceShareBytes,
      usage: { largeBodyBytes: (key) => this.#namespaceUsage(key) },
      deployments: o.tenantDeployments,
      now: o.now,
    });
    this.#sweep = new OrphanSweep({
      jsm: o.jsm,
      chunkBytes: o.chunkBytes,
      graceMs: o.orphanGraceMs,
      publishBoundMs: 2 * o.requestTimeoutMs + 60_000,
      now: o.now,
      commit: (subject, namespace, length, ttlSeconds) =>
        this.#commit(subject, namespace, length, ttlSeconds),
      purge: (subject) => this.#purge(subject),
    });
  }

  /** Runs the sweep every interval (with jitter), from now on. */
  start(): void {
    if (this.unsupportedReason || this.#o.sweepIntervalMs <= 0 || this.#timer) return;
    const next = () => {
      const ms = this.#o.sweepIntervalMs * (0.75 + Math.random() / 2);
      this.#timer = setTimeout(() => {
        this.sweep()
          .catch((err: unknown) => this.#o.log.warn({ err }, "large-body sweep failed"))
          .finally(() => this.#timer && next());
      }, ms);
      this.#timer.unref();
    };
    next();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** One pass now: removes orphans, and returns (and keeps for the metric) usage per namespace. */
  sweep(): Promise<SweepResult> {
    this.#sweeping ??= this.#sweep
      .run()
      .then((r) => {
        this.#usage = r.usage;
        return r;
      })
      .finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  /** Bytes of large bodies per namespace, as the last sweep found them. */
  usage(): ReadonlyMap<string, number> {
    return this.#usage;
  }

  async write(topic: TopicAddress, source: ByteSource, o: BodyWriteOptions): Promise<WrittenBody> {
    if (this.unsupportedReason) {
      throw new AppError("large_body_unsupported", { message: this.unsupportedReason });
    }
    await this.#ensureStream();
    const id = randomBytes(16).toString("hex");
    const subject = this.#subject(topic, id);
    // The namespace's and the tenant's shares: what they store now (whole chunks) plus what
    // this body brings.
    const hold = await this.#share.open(topic.namespace.key, o.declaredLength ?? 0);
    let stored = false;
    try {
      const { length, sha256, publishByMs } = await writeChunks(source, {
        requests: this.#o.requests,
        subject,
        chunkBytes: this.#o.chunkBytes,
        window: this.#o.window,
        ttlSeconds: o.retentionSeconds + this.#o.ttlMarginSeconds,
        boundMs: uploadBoundMs(
          o.declaredLength ?? o.maxBytes,
          {
            minBytesPerSecond: this.#o.minUploadBytesPerSecond,
            windowSeconds: this.#o.uploadWindowSeconds,
          },
          this.#o.requestTimeoutMs,
        ),
        now: this.#o.now,
        messageLater: o.messageLater === true,
        maxBytes: o.maxBytes,
        timeoutMs: this.#o.requestTimeoutMs,
        namespaceLabel: namespaceLabel(topic.namespace),
        onBytes: async (n) => {
          hold.add(n);
          await this.#budget.take(n);
          this.#o.observeBytes("in", n);
        },
      });
      stored = true;
      return { id, length, sha256, publishByMs };
    } catch (err) {
      await this.#purge(subject).catch(() => undefined);
      throw toBodyWriteError(err);
    } finally {
      hold.end(stored);
    }
  }

  read(topic: TopicAddress, ref: BodyRef): AsyncIterable<Uint8Array> {
    return readChunks({
      jsm: this.#o.jsm,
      subject: this.#subject(topic, ref.id),
      length: ref.length,
      sha256: ref.sha256,
      window: this.#o.readWindow,
      onBytes: (n) => this.#o.observeBytes("out", n),
      ...(this.#o.observeReadAhead ? { onReadAhead: this.#o.observeReadAhead } : {}),
    });
  }

  head(topic: TopicAddress, ref: BodyRef, bytes: number): Promise<Uint8Array> {
    if (this.unsupportedReason) return Promise.resolve(new Uint8Array(0));
    return readHead(this.#o.jsm, this.#subject(topic, ref.id), bytes);
  }

  commit(topic: TopicAddress, ref: BodyRef, retentionSeconds: number): Promise<void> {
    return this.#commit(
      this.#subject(topic, ref.id),
      namespaceLabel(topic.namespace),
      ref.length,
      retentionSeconds + this.#o.ttlMarginSeconds,
    );
  }

  async #commit(subject: string, namespace: string, length: number, ttlSeconds: number) {
    const h = headers();
    h.set("Nats-Expected-Stream", BODY_STREAM);
    h.set("Nats-TTL", String(ttlSeconds));
    h.set(COMMIT_HEADER, String(length));
    h.set(NAMESPACE_HEADER, namespace);
    await this.#o.requests.publish(subject, new Uint8Array(0), this.#o.requestTimeoutMs, h);
  }

  async remove(topic: TopicAddress, ref: BodyRef): Promise<void> {
    await this.#purge(this.#subject(topic, ref.id));
  }

  /**
   * The body store's last sequence now (0: no store yet). Read before a topic's stream is listed
   * for removal, purged or deleted, it bounds which of the topic's bodies `removeCommitted` takes.
   */
  async position(): Promise<number> {
    if (this.unsupportedReason) return 0;
    try {
      return (await this.#o.jsm.streams.info(BODY_STREAM)).state.last_seq;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return 0;
      throw toStorageError(err);
    }
  }

  /**
   * Removes the bodies under `prefix` (a topic's, `bodyTopicPrefix`) whose commit marker is at or
   * before `position`, read before the topic's stream was listed for removal, purged or deleted:
   * the message of each was stored before then, so it was in the stream now purged or deleted (or
   * an earlier one). A body without a marker, or with a later one, may be an upload whose message
   * is still to come (stored after the purge, or making the topic again) and stays: the orphan
   * sweep removes it if no message points at it. The number removed.
   */
  async removeCommitted(prefix: string, position: number): Promise<number> {
    if (this.unsupportedReason || position <= 0) return 0;
    let subjects: string[];
    try {
      const info = await this.#o.jsm.streams.info(BODY_STREAM, { subjects_filter: `${prefix}.>` });
      subjects = Object.keys(info.state.subjects ?? {});
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return 0;
      throw toStorageError(err);
    }
    let removed = 0;
    for (const subject of subjects) {
      let last: StoredMsg | null;
      try {
        last = await this.#o.jsm.streams.getMessage(BODY_STREAM, { last_by_subj: subject });
      } catch (err) {
        if (!isNothingFound(err)) throw toStorageError(err);
        last = null; // expired or removed meanwhile
      }
      if (!last || last.seq > position || !last.header?.has(COMMIT_HEADER)) continue;
      await this.#purge(subject);
      removed++;
    }
    return removed;
  }

  copy(
    from: TopicAddress,
    ref: BodyRef,
    to: TopicAddress,
    retentionSeconds: number,
  ): Promise<WrittenBody> {
    return copyBody(this, from, ref, to, retentionSeconds);
  }

  /** Bytes of large bodies the topic's namespace stores (in whole chunks: an upper bound). */
  /** Bytes of a namespace's large bodies in the store (whole chunks). */
  async #namespaceUsage(namespaceKey: string): Promise<number> {
    try {
      const info = await this.#o.jsm.streams.info(BODY_STREAM, {
        subjects_filter: bodyNamespaceFilter(this.#o.region, { key: namespaceKey }),
      });
      let chunks = 0;
      for (const n of Object.values(info.state.subjects ?? {})) chunks += n;
      return chunks * this.#o.chunkBytes;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return 0;
      throw toStorageError(err);
    }
  }

  #subject(topic: TopicAddress, id: string): string {
    return `${bodyTopicPrefix(this.#o.region, topic)}.${id}`;
  }

  async #purge(filter: string): Promise<void> {
    try {
      await this.#o.jsm.streams.purge(BODY_STREAM, { filter });
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return;
      throw toStorageError(err);
    }
  }

  /**
   * Creates the body stream, or brings its limits in line with the configuration. A store larger
   * than the servers' JetStream storage cannot be created (its `max_bytes` is reserved): every
   * large publish is then refused with large_body_store_unavailable, and the operator is told
   * what to change (once a minute at most). It is tried again on the next large publish.
   */
  #ensureStream(): Promise<void> {
    this.#ready ??= this.#makeStream().catch((err: unknown) => {
      this.#ready = null;
      if (!isApiError(err, INSUFFICIENT_RESOURCES)) throw toStorageError(err);
      const now = this.#o.now();
      if (now - this.#unavailableLoggedAt >= UNAVAILABLE_LOG_MS) {
        this.#unavailableLoggedAt = now;
        this.#o.log.error(
          { err, maxStoreBytes: this.#o.maxStoreBytes, replicas: this.#o.replicas },
          `the large-body store ${BODY_STREAM} cannot be created: VQS_LARGE_BODY_STORE_BYTES ` +
            `(${this.#o.maxStoreBytes} bytes, ${this.#o.replicas} replica(s)) is more than the ` +
            "NATS servers have JetStream storage for (their max_file_store, less what other " +
            "streams reserve); large bodies are refused (503 large_body_store_unavailable) " +
            "until it is lowered, e.g. to a quarter of max_file_store",
        );
      }
      throw new AppError("large_body_store_unavailable", { cause: err, retryAfterSeconds: 60 });
    });
    return this.#ready;
  }

  async #makeStream(): Promise<void> {
    const o = this.#o;
    const config: Partial<StreamConfig> & { name: string } = {
      name: BODY_STREAM,
      description: "vqs large message bodies (chunks)",
      subjects: [BODY_SUBJECTS],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: o.replicas,
      max_age: o.maxAgeMs * 1_000_000,
      max_bytes: o.maxStoreBytes > 0 ? o.maxStoreBytes : -1,
      discard: DiscardPolicy.New,
      allow_msg_ttl: true,
      allow_direct: true,
      duplicate_window: 120 * 1_000_000_000,
    };
    try {
      const info = await o.jsm.streams.info(BODY_STREAM);
      if (info.config.max_bytes !== config.max_bytes || info.config.max_age !== config.max_age) {
        await o.jsm.streams.update(BODY_STREAM, { ...info.config, ...config });
      }
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
      await o.jsm.streams.add(config);
    }
  }
}

/** A failed body write as the client should see it. */
function toBodyWriteError(err: unknown): unknown {
  if (isAppError(err)) return err;
  if (
    err instanceof PubAckError &&
    (STORE_FULL_CODES.has(err.code) || /maximum bytes/i.test(err.message))
  ) {
    return new AppError("large_body_store_full", { cause: err, retryAfterSeconds: 60 });
  }
  return toStorageError(err);
}

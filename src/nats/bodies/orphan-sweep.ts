// The body store's sweep: lists every stored body, sums what each namespace stores, and removes
// orphans, bodies that no message points at (an upload cut short by a gateway that died, a
// message publish that failed after its body was stored). A body without a commit marker whose
// last chunk (a batch part's: its publish-by time) is older than the grace is looked for in its
// topic among the messages published while it was written and shortly after: found, the marker
// is written; not found, it goes.
import { JetStreamApiCodes, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { isApiError, isNoResponders, isNothingFound } from "../core/errors.js";
import { BODY_STREAM, BODY_SUBJECTS } from "../core/naming.js";
import { H, rfc3339ToMs } from "../messages/message-codec.js";
import { COMMIT_HEADER, NAMESPACE_HEADER, PUBLISH_BY_HEADER } from "./body-chunks.js";

export interface SweepOptions {
  readonly jsm: JetStreamManager;
  readonly chunkBytes: number;
  /** An uncommitted body whose last chunk is younger than this may be an upload under way. */
  readonly graceMs: number;
  /** How long after its last chunk a body's message can have been stored (the publish bound). */
  readonly publishBoundMs: number;
  readonly now: () => number;
  /** Writes the commit marker of a body whose message was found. */
  readonly commit: (
    subject: string,
    namespace: string,
    length: number,
    ttlSeconds: number,
  ) => Promise<void>;
  readonly purge: (subject: string) => Promise<void>;
}

export interface SweepResult {
  /** Bytes stored per namespace (its label); uncommitted bodies counted in whole chunks. */
  readonly usage: Map<string, number>;
  readonly removed: number;
}

/** Messages of a topic looked through for an orphan candidate's message, at most. */
const MAX_SCAN = 100_000;

/** What is known of a committed body (it never changes): kept between sweeps. */
interface Committed {
  readonly namespace: string;
  readonly length: number;
}

export class OrphanSweep {
  readonly #o: SweepOptions;
  readonly #committed = new Map<string, Committed>();

  constructor(o: SweepOptions) {
    this.#o = o;
  }

  async run(): Promise<SweepResult> {
    const usage = new Map<string, number>();
    let removed = 0;
    const subjects = await this.#subjects();
    for (const known of this.#committed.keys()) {
      if (!subjects.has(known)) this.#committed.delete(known); // expired or removed
    }
    for (const [subject, count] of subjects) {
      let body = this.#committed.get(subject) ?? null;
      if (!body) {
        const last = await this.#get({ last_by_subj: subject });
        if (!last) continue;
        const length = last.header?.get(COMMIT_HEADER);
        if (length) {
          body = { namespace: last.header.get(NAMESPACE_HEADER), length: Number(length) };
          this.#committed.set(subject, body);
        } else {
          const first = await this.#get({ seq: 1, next_by_subj: subject });
          const namespace = first?.header?.get(NAMESPACE_HEADER) ?? "";
          // A batch part's message waits for the rest of its batch: until its publish-by time.
          const publishBy = Number(first?.header?.get(PUBLISH_BY_HEADER)) || 0;
          const lastMs = Math.max(rfc3339ToMs(last.timestamp), publishBy);
          if (first && this.#o.now() - lastMs > this.#o.graceMs) {
            const found = await this.#referenced(subject, rfc3339ToMs(first.timestamp), lastMs);
            if (found === null) {
              await this.#o.purge(subject);
              removed++;
              continue;
            }
            // The marker lives as long as the chunks (their TTL counts from the first one).
            const ttl = Number(first.header?.get("Nats-TTL")) || 0;
            const left = Math.ceil(ttl - (this.#o.now() - rfc3339ToMs(first.timestamp)) / 1000);
            await this.#o.commit(subject, namespace, found, Math.max(1, left));
            body = { namespace, length: found };
            this.#committed.set(subject, body);
          } else {
            body = { namespace, length: count * this.#o.chunkBytes };
          }
        }
      }
      usage.set(body.namespace, (usage.get(body.namespace) ?? 0) + body.length);
    }
    return { usage, removed };
  }

  async #subjects(): Promise<Map<string, number>> {
    try {
      const info = await this.#o.jsm.streams.info(BODY_STREAM, { subjects_filter: BODY_SUBJECTS });
      return new Map(Object.entries(info.state.subjects ?? {}));
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return new Map();
      throw err;
    }
  }

  async #get(
    query: { last_by_subj: string } | { seq: number; next_by_subj: string },
  ): Promise<StoredMsg | null> {
    try {
      return await this.#o.jsm.streams.getMessage(BODY_STREAM, query);
    } catch (err) {
      if (isNothingFound(err)) return null;
      throw err;
    }
  }

  async #streamMissing(stream: string): Promise<boolean> {
    try {
      await this.#o.jsm.streams.info(stream);
      return false;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return true;
      throw err;
    }
  }

  /**
   * The length the message pointing at the body claims, when the body's topic holds one among
   * the messages stored from its first chunk to the publish bound after its last; else null.
   * A topic too busy to look through keeps the body (the TTL removes it with its time).
   */
  async #referenced(subject: string, firstMs: number, lastMs: number): Promise<number | null> {
    const [, , , topicId, bodyId] = subject.split(".");
    const stream = `VQS_${topicId ?? ""}`;
    const endMs = lastMs + this.#o.publishBoundMs;
    let seq: number;
    try {
      const start = await this.#o.jsm.direct.getMessage(stream, {
        start_time: new Date(firstMs),
      });
      if (!start) return null;
      seq = start.seq;
    } catch (err) {
      if (isNothingFound(err) || isApiError(err, JetStreamApiCodes.StreamNotFound)) return null;
      // Direct Get of a stream that does not exist finds no responder: a first upload to a new
      // topic cut short before its message created the stream. Asked again of the API, so a
      // stream only unreachable for a moment keeps its bodies; anything else fails this body
      // alone, not the sweep.
      if (isNoResponders(err) && (await this.#streamMissing(stream))) return null;
      throw err;
    }
    for (let scanned = 0; scanned < MAX_SCAN;) {
      let got = 0;
      try {
        for await (const m of await this.#o.jsm.direct.getBatch(stream, { seq, batch: 256 })) {
          got++;
          scanned++;
          seq = m.seq + 1;
          if (rfc3339ToMs(m.timestamp) > endMs) return null;
          const ref = m.header?.get(H.body) ?? "";
          if (ref.startsWith(`${bodyId};`)) return Number(ref.split(";")[1]);
        }
      } catch (err) {
        if (!isNothingFound(err)) throw err;
      }
      if (got === 0) return null;
    }
    return this.#o.chunkBytes; // not looked through: kept
  }
}

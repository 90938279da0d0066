// Seeing and steering a namespace's queues (docs/api.md, "Management API"): topics with their figures,
// groups with theirs, peeking at messages without leasing them, and the destructive calls
// (delete a topic or a group, purge, seek). Routes validate input and call these; the store side
// is the QueueAdmin port, messages are read through the MessageLog.
import type { IdLeaseLedger } from "../ledgers/id-lease-ledger.js";
import type { BodyStore } from "../bodies.js";
import { AppError } from "../../errors.js";
import type { FlowSlotLedger, GroupCursor, MessageLog, StoredMessage } from "../broker.js";
import { busiestKeys } from "./busiest-keys.js";
import { parseMessageId, storedMessageId } from "../identity/message-id.js";
import { deliveredContentType } from "../limits.js";
import type { GroupAddress, Namespace, TopicAddress } from "../namespace.js";
import type { SettingsStore } from "../settings/settings-store.js";
import { appliesTo } from "../settings/topic-pattern.js";
import type {
  GroupFigures,
  NamespaceUsage,
  QueueAdmin,
  SeekTarget,
  TopicFigures,
} from "./queue-admin.js";
import type {
  BusiestKeys,
  ConsumerGroup,
  ConsumerGroups,
  NamespaceStorage,
  PeekedMessage,
  PeekPage,
  Purged,
  Topic,
  TopicPage,
} from "../../api/management.js";

export interface ManagementDeps {
  readonly admin: QueueAdmin;
  readonly broker: Pick<MessageLog, "readTopic"> & Pick<GroupCursor, "progress">;
  /** Flow control's key records (a group's busiest keys); without them no key is in flight. */
  readonly slots?: Pick<FlowSlotLedger, "listKeySlots">;
  readonly settings: SettingsStore;
  /** The key duplicate message IDs are signed with (to read an `after` message ID). */
  readonly duplicateIdKey: Buffer;
  readonly now: () => number;
  /** This gateway's by-ID marks, forgotten with a removed or sought group (QueueContext's). */
  readonly idLedger?: Pick<IdLeaseLedger, "forget">;
  /** Where large bodies are (a peek shows their start). */
  readonly bodies?: BodyStore;
  /** A namespace's storage quotas in bytes (0: none): all its topics, and each topic. */
  readonly storageLimits: (ns: Namespace) => StorageLimits;
}

export interface StorageLimits {
  readonly namespaceBytes: number;
  readonly topicBytes: number;
}

/** Bytes of a payload shown as its preview. */
const PREVIEW_BYTES = 256;
/**
 * Whole payloads one peek page shows together (`payload=full`); a message whose payload alone is
 * larger shows its preview only, as a large body does.
 */
export const PEEK_PAGE_BYTES = 4 * 1024 * 1024;
/** Payload bytes a peek reads from the store at once (then keeps only what the page shows). */
const PEEK_READ_BYTES = 1024 * 1024;
/** Topics whose figures are read at once for a page. */
const FIGURES_IN_PARALLEL = 16;
/**
 * JetStream API calls one listing request makes for its page's figures, at most: a topic's are up
 * to 4 (STREAM.INFO, the moved-count STREAM.INFO, the oldest and newest message), a group's up to
 * 3 (its oldest unacknowledged message, dead-lettered count, push health). A page is cut there
 * whatever `limit` asks, and its cursor pages on; listing the names costs one call per 256.
 */
export const LISTING_CALLS = 400;
const TOPICS_PER_PAGE = Math.floor(LISTING_CALLS / 4);
const GROUPS_PER_PAGE = Math.floor((LISTING_CALLS - 4) / 3);

const NO_SLOTS: Pick<FlowSlotLedger, "listKeySlots"> = {
  listKeySlots: () => Promise.resolve({ records: [], more: false }),
};

export class ManagementService {
  readonly #d: ManagementDeps;

  constructor(deps: ManagementDeps) {
    this.#d = deps;
  }

  /** A page of the namespace's topics, by name after `cursor` (the last name of the previous). */
  async listTopics(ns: Namespace, cursor: string | null, limit: number): Promise<TopicPage> {
    const [all, usage] = await Promise.all([
      this.#d.admin.topicNames(ns),
      this.#d.admin.namespaceBytes(ns),
    ]);
    const names = all.filter((n) => cursor === null || n > cursor);
    const size = Math.min(limit, TOPICS_PER_PAGE);
    const page = names.slice(0, size);
    const views: (Topic | null)[] = new Array<Topic | null>(page.length).fill(null);
    for (let i = 0; i < page.length; i += FIGURES_IN_PARALLEL) {
      await Promise.all(
        page.slice(i, i + FIGURES_IN_PARALLEL).map(async (name, j) => {
          const figures = await this.#d.admin.topic({ namespace: ns, topic: name });
          views[i + j] = figures ? this.#view(ns, figures) : null;
        }),
      );
    }
    return {
      topics: views.filter((v): v is Topic => v !== null),
      nextCursor: names.length > size ? page.at(-1)! : null,
      storage: this.storage(ns, usage),
    };
  }

  /** The namespace's storage against its quotas. */
  storage(ns: Namespace, usage: NamespaceUsage): NamespaceStorage {
    const limits = this.#d.storageLimits(ns);
    return {
      usedBytes: usage.bytes,
      largeBodyBytes: usage.largeBodyBytes,
      limitBytes: limits.namespaceBytes,
      topicLimitBytes: limits.topicBytes,
    };
  }

  async topic(at: TopicAddress): Promise<Topic> {
    const figures = await this.#d.admin.topic(at);
    if (!figures) throw new AppError("topic_not_found");
    return this.#view(at.namespace, figures);
  }

  /** A page of the topic's groups, by name after `cursor` (the last name of the previous). */
  async consumers(
    at: TopicAddress,
    cursor: string | null = null,
    limit: number = GROUPS_PER_PAGE,
  ): Promise<ConsumerGroups> {
    const size = Math.min(limit, GROUPS_PER_PAGE);
    // One more than the page: whether another page follows.
    const groups = await this.#d.admin.groups(at, { after: cursor, max: size + 1 });
    if (!groups) throw new AppError("topic_not_found");
    const page = groups.slice(0, size);
    const figures = await this.#d.admin.topic(at);
    const delayed = figures?.delayed ?? 0;
    const now = this.#d.now();
    const consumerGroups: ConsumerGroup[] = new Array<ConsumerGroup>(page.length);
    for (let i = 0; i < page.length; i += FIGURES_IN_PARALLEL) {
      await Promise.all(
        page.slice(i, i + FIGURES_IN_PARALLEL).map(async (g, j) => {
          consumerGroups[i + j] = await this.#groupView(at, g, delayed, now);
        }),
      );
    }
    return { consumerGroups, nextCursor: groups.length > size ? page.at(-1)!.name : null };
  }

  async #groupView(
    at: TopicAddress,
    g: GroupFigures,
    delayed: number,
    now: number,
  ): Promise<ConsumerGroup> {
    const group: GroupAddress = { ...at, group: g.name };
    const settings = this.#d.settings.effective(at.namespace, at.topic, g.name);
    const [deadLettered, health] = await Promise.all([
      this.#d.admin.deadLettered(group),
      settings?.push ? this.#d.admin.pushHealth(group) : Promise.resolve(null),
    ]);
    return {
      name: g.name,
      backlog: g.backlog,
      inFlight: g.inFlight,
      delayed,
      oldestUnacknowledgedAgeSeconds:
        g.oldestUnacknowledgedAtMs === null
          ? 0
          : Math.max(0, Math.round((now - g.oldestUnacknowledgedAtMs) / 1000)),
      deliveries: g.deliveries,
      redelivered: g.redelivered,
      acknowledgedThrough: g.acknowledgedThrough,
      position: g.position,
      deadLettered,
      settings,
      pushHealth: settings?.push
        ? {
            lastSuccessAt: iso(health?.lastSuccessAtMs ?? null),
            lastFailureAt: iso(health?.lastFailureAtMs ?? null),
            lastFailure: health?.lastFailure ?? null,
          }
        : null,
    };
  }

  /**
   * Messages consumer groups see, oldest first, after a message ID or from a time on. Reads
   * only: nothing is leased, no delivery is counted. A page holds a bounded share of memory
   * whatever its messages' sizes: the store is read a few messages at a time (PEEK_READ_BYTES),
   * each message's preview kept and its payload dropped, and with `full` the payloads shown
   * together stop at PEEK_PAGE_BYTES (the page is cut, `truncated`, and `next` pages on).
   */
  async peek(
    at: TopicAddress,
    after: string | null,
    limit: number,
    full: boolean,
  ): Promise<PeekPage> {
    if ((await this.#d.admin.topic(at)) === null) throw new AppError("topic_not_found");
    let seq = await this.#fromSeq(at, after);
    const now = this.#d.now();
    const messages: PeekedMessage[] = [];
    let taken = 0;
    let shownBytes = 0;
    let last: string | null = null;
    let more = false;
    let truncated = false;
    read: for (;;) {
      const batch = await this.#d.broker.readTopic(at, seq, limit + 1 - taken, PEEK_READ_BYTES);
      if (batch.length === 0) break;
      // One after another: a large body's preview reads a chunk of it (256 KiB).
      for (const { streamSeq, message } of batch) {
        if (taken === limit) {
          more = true;
          break read;
        }
        const whole = full && !message.body && message.payload.byteLength <= PEEK_PAGE_BYTES;
        if (whole && taken > 0 && shownBytes + message.payload.byteLength > PEEK_PAGE_BYTES) {
          more = truncated = true;
          break read;
        }
        taken++;
        seq = streamSeq + 1;
        last = storedMessageId(message.idSeq, message.nonce);
        if (message.expiresAtMs <= now) continue;
        messages.push(peeked(message, await this.#head(at, message), whole));
        if (whole) shownBytes += message.payload.byteLength;
      }
    }
    return { messages, next: more ? last : null, truncated };
  }

  /**
   * What a peek shows of a message: its inline payload, or the start of a large body (its
   * first chunk only, never the whole body). A body that cannot be read shows nothing.
   */
  async #head(at: TopicAddress, m: StoredMessage): Promise<Uint8Array> {
    if (!m.body) return m.payload;
    if (!this.#d.bodies) return new Uint8Array(0);
    try {
      return await this.#d.bodies.head(at, m.body, PREVIEW_BYTES);
    } catch {
      // unreadable: the preview stays empty, the size says what was stored
      return new Uint8Array(0);
    }
  }

  async #fromSeq(at: TopicAddress, after: string | null): Promise<number> {
    if (after === null || after === "") return 1;
    const timeMs = Date.parse(after);
    if (/^\d{4}-\d\d-\d\dT/.test(after) && Number.isFinite(timeMs)) {
      return this.#d.admin.positionAt(at, timeMs);
    }
    const id = parseMessageId(this.#d.duplicateIdKey, at, after);
    if (id === null || id.kind !== "stored") {
      throw new AppError("invalid_query", {
        message: "`after` must be a message ID of this topic or an ISO 8601 time.",
      });
    }
    return id.seq + 1;
  }

  /** Removes the topic with its messages, groups, and the settings documents naming it. */
  async deleteTopic(at: TopicAddress): Promise<void> {
    const deleted = await this.#d.admin.deleteTopic(at);
    this.#d.idLedger?.forget(at);
    if (!deleted) throw new AppError("topic_not_found");
    for (const e of this.#d.settings.list(at.namespace)) {
      if (e.topic === at.topic) await this.#d.settings.delete(at.namespace, e.topic, e.group);
    }
  }

  async purge(at: TopicAddress): Promise<Purged> {
    const purged = await this.#d.admin.purgeTopic(at);
    if (purged === null) throw new AppError("topic_not_found");
    return { purged };
  }

  async deleteGroup(at: GroupAddress): Promise<void> {
    const deleted = await this.#d.admin.deleteGroup(at);
    this.#d.idLedger?.forget(at);
    if (!deleted) throw new AppError("group_not_found");
  }

  async seek(at: GroupAddress, to: SeekTarget): Promise<void> {
    const sought = await this.#d.admin.seekGroup(at, to);
    this.#d.idLedger?.forget(at);
    if (!sought) throw new AppError("group_not_found");
  }

  /** The group's busiest flow-control keys, region-wide, with bounded work (busiest-keys.ts). */
  keys(at: GroupAddress, limit: number): Promise<BusiestKeys> {
    return busiestKeys(
      {
        slots: this.#d.slots ?? NO_SLOTS,
        broker: this.#d.broker,
        flowOf: (g) =>
          this.#d.settings.effective(g.namespace, g.topic, g.group)?.flowControl ?? null,
        now: this.#d.now,
      },
      at,
      limit,
    );
  }

  namespaces(): ReturnType<QueueAdmin["namespaces"]> {
    return this.#d.admin.namespaces();
  }

  #view(ns: Namespace, f: TopicFigures): Topic {
    return {
      name: f.name,
      messages: f.messages,
      delayed: f.delayed,
      bytes: f.bytes,
      oldestMessageAt: iso(f.oldestMessageAtMs),
      newestMessageAt: iso(f.newestMessageAtMs),
      consumerGroups: f.consumerGroups,
      settings: this.#d.settings
        .list(ns)
        .filter((e) => appliesTo(e.topic, f.name))
        .map((e) => ({
          topic: e.topic,
          consumerGroup: e.group,
          push: e.settings.push !== null,
          deadLetterTopic: e.settings.deadLetter?.topic ?? null,
        })),
    };
  }
}

/**
 * A large body is never put into the JSON whole (`full` gives the payload of inline messages
 * up to PEEK_PAGE_BYTES only); its `size` is the body's length and its preview the body's first
 * bytes.
 */
function peeked(m: StoredMessage, start: Uint8Array, whole: boolean): PeekedMessage {
  const bytes = Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength);
  const head = Buffer.from(start.buffer, start.byteOffset, start.byteLength).subarray(
    0,
    PREVIEW_BYTES,
  );
  let preview: string;
  let previewEncoding: "utf8" | "base64" = "utf8";
  try {
    preview = new TextDecoder("utf-8", { fatal: true }).decode(head);
  } catch {
    // Binary, or a multi-byte character cut at the preview's end: shown as base64.
    preview = head.toString("base64");
    previewEncoding = "base64";
  }
  return {
    messageId: storedMessageId(m.idSeq, m.nonce),
    timestamp: new Date(m.publishedAtMs).toISOString(),
    expiresAt: new Date(m.expiresAtMs).toISOString(),
    contentType: deliveredContentType(m.contentType),
    size: m.body ? m.body.length : bytes.length,
    preview,
    previewEncoding,
    ...(whole ? { payload: bytes.toString("base64") } : {}),
    deadLetter: m.deadLetter,
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

// Leases taken by message ID and what the group's cursor did meanwhile, on the records port
// (JetStream cannot make a durable consumer deliver one chosen sequence: these leases are the
// gateway's own). The rules on top of them are IdLeases' (id-leases.ts); this keeps the
// records: the ID lease by compare-and-set, the cursor's lease of a message, and the group's mark
// "uses receive by ID", which every acknowledgement asks for (cached: ordinary groups pay no
// round trip).
import type { GroupAddress, TopicAddress } from "../namespace.js";
import type { RecordStore } from "../records/record-store.js";
import { Records } from "../records/typed-records.js";

/** A lease taken by message ID. */
export interface IdLease {
  readonly state: "leased" | "acked" | "released";
  readonly deadlineMs: number;
  /** Deliveries made by ID so far. */
  readonly count: number;
  /** Times the group's cursor handed the message out while an ID lease held it (not deliveries). */
  readonly bounces: number;
  /** Random, names this lease in its receipt handle. */
  readonly leaseId: number;
  /** Store revision, for compare-and-set. */
  readonly revision: number;
}

/** What a group's cursor did with a message, as far as receive by ID needs to know. */
export interface CursorLease {
  /** The delivery number of the cursor's latest delivery. */
  readonly count: number;
  /** When that delivery's lease ends (ms). */
  readonly deadlineMs: number;
  readonly acked: boolean;
}

/** How long a gateway trusts its cached "this group never used receive by ID". */
export const ID_FLAG_CACHE_MS = 1000;
/** The mark is written again this long after its last write, so the records' TTL never drops it. */
const FLAG_REFRESH_MS = 24 * 3600 * 1000;
/** Groups whose mark is cached, at most (all forgotten at once when full). */
const MAX_FLAGS = 100_000;

export interface IdLeaseLedgerOptions {
  readonly now: () => number;
  /**
   * How long a new mark waits before it counts, so that every gateway's cached "no" has run out
   * (ID_FLAG_CACHE_MS and a margin; 0 where this ledger is the only one, as in one-gateway twins).
   */
  readonly markWaitMs: number;
}

const groupId = (g: GroupAddress) => JSON.stringify([g.namespace.key, g.topic, g.group]);

export class IdLeaseLedger {
  readonly #o: IdLeaseLedgerOptions;
  readonly #idLeases: Records<Omit<IdLease, "revision">>;
  readonly #cursorLeases: Records<CursorLease>;
  readonly #marks: Records<true>;
  readonly #flags = new Map<string, { on: boolean; untilMs: number }>();

  constructor(records: RecordStore, o: IdLeaseLedgerOptions) {
    this.#o = o;
    this.#idLeases = new Records(records, {
      name: "i",
      codec: ID_LEASE,
      ops: { get: "id_lease_get", put: "id_lease_put" },
    });
    this.#cursorLeases = new Records(records, {
      name: "c",
      codec: CURSOR_LEASE,
      ops: { get: "cursor_lease_get", put: "cursor_lease_put" },
    });
    this.#marks = new Records(records, {
      name: "byid",
      codec: { encode: () => "1", decode: () => true },
      ops: { get: "id_lease_mark_get", put: "id_lease_mark_put" },
    });
  }

  /** Whether the group ever used receive by ID (so ordinary receives must honour ID leases). */
  usesIdLeases(group: GroupAddress): Promise<boolean> {
    const known = this.#known(group);
    if (known !== undefined) return Promise.resolve(known);
    return this.#readMark(group);
  }

  /**
   * Marks the group as using receive by ID; resolves once every gateway honours it. When this
   * call (re)creates the mark, other gateways may still hold a cached "no" for up to
   * ID_FLAG_CACHE_MS, so it waits that out (once per group).
   */
  async markIdLeases(group: GroupAddress): Promise<void> {
    const mark = await this.#marks.get(group, null);
    this.#remember(group, true, Number.MAX_SAFE_INTEGER);
    if (mark !== null) {
      if (this.#o.now() - mark.writtenAtMs > FLAG_REFRESH_MS)
        await this.#marks.put(group, null, true);
      return;
    }
    await this.#marks.put(group, null, true);
    if (this.#o.markWaitMs > 0) await new Promise((r) => setTimeout(r, this.#o.markWaitMs));
  }

  async getIdLease(group: GroupAddress, streamSeq: number): Promise<IdLease | null> {
    const e = await this.#idLeases.get(group, streamSeq);
    return e === null ? null : { ...e.value, revision: e.revision };
  }

  /** Compare-and-set (`expectedRevision` null: create); the new revision, or null when another won. */
  putIdLease(
    group: GroupAddress,
    streamSeq: number,
    lease: Omit<IdLease, "revision">,
    expectedRevision: number | null,
  ): Promise<number | null> {
    return this.#idLeases.set(group, streamSeq, lease, expectedRevision);
  }

  /** Records a cursor delivery, lease change or ack (only for groups that use receive by ID). */
  async putCursorLease(group: GroupAddress, streamSeq: number, lease: CursorLease): Promise<void> {
    await this.#cursorLeases.put(group, streamSeq, lease);
  }

  getCursorLease(group: GroupAddress, streamSeq: number): Promise<CursorLease | null> {
    return this.#cursorLeases.value(group, streamSeq);
  }

  /**
   * Forgets this gateway's cached mark of a group removed or sought (its records went with it),
   * or of every group of a removed topic, so a group made again under the name starts unmarked.
   */
  forget(at: GroupAddress | TopicAddress): void {
    if ("group" in at) {
      this.#flags.delete(groupId(at));
      return;
    }
    const prefix = JSON.stringify([at.namespace.key, at.topic]).slice(0, -1) + ",";
    for (const k of [...this.#flags.keys()]) if (k.startsWith(prefix)) this.#flags.delete(k);
  }

  #known(group: GroupAddress): boolean | undefined {
    const cached = this.#flags.get(groupId(group));
    return cached && (cached.on || cached.untilMs > this.#o.now()) ? cached.on : undefined;
  }

  async #readMark(group: GroupAddress): Promise<boolean> {
    const on = (await this.#marks.get(group, null)) !== null;
    this.#remember(group, on, this.#o.now() + ID_FLAG_CACHE_MS);
    return on;
  }

  #remember(group: GroupAddress, on: boolean, untilMs: number): void {
    if (this.#flags.size >= MAX_FLAGS) this.#flags.clear(); // bounded: one entry per group seen
    this.#flags.set(groupId(group), { on, untilMs });
  }
}

const ID_LEASE = {
  encode: (l: Omit<IdLease, "revision">) =>
    JSON.stringify({
      state: l.state,
      deadlineMs: l.deadlineMs,
      count: l.count,
      bounces: l.bounces,
      leaseId: l.leaseId,
    }),
  decode: (text: string): Omit<IdLease, "revision"> => {
    const v = JSON.parse(text) as Partial<IdLease>;
    return {
      state: v.state ?? "released",
      deadlineMs: v.deadlineMs ?? 0,
      count: v.count ?? 0,
      bounces: v.bounces ?? 0,
      leaseId: v.leaseId ?? 0,
    };
  },
};

const CURSOR_LEASE = {
  encode: (l: CursorLease) =>
    JSON.stringify({ count: l.count, deadlineMs: l.deadlineMs, acked: l.acked }),
  decode: (text: string): CursorLease => {
    const v = JSON.parse(text) as Partial<CursorLease> | number;
    // A bare number is a bounce at the concurrency limit (LeaseLedger.noteLimitBounce, the same
    // record): that delivery was released unseen, so the cursor handed the message out at most
    // once less, and not now.
    if (typeof v === "number") return { count: Math.max(0, v - 1), deadlineMs: 0, acked: false };
    return { count: v.count ?? 0, deadlineMs: v.deadlineMs ?? 0, acked: v.acked === true };
  },
};

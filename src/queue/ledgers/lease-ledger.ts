// What the group's cursor cannot say about a lease, on the records port: which delivery of a
// message is current once it was redelivered (so older receipt handles are stale), deliveries
// released unseen at the group's concurrency limit (never in flight), and how many of the group's
// messages went to its dead-letter topic. Leases cut short through a handle are the CutLeaseLog's
// (broker.ts): every gateway must know them without a round trip.
import type { GroupAddress } from "../namespace.js";
import type { RecordStore } from "../records/record-store.js";
import { COUNT, Records, type RecordCodec } from "../records/typed-records.js";

/** A count that reads as 0 when it is not a number. */
const TALLY: RecordCodec<number> = {
  encode: (n) => String(n),
  decode: (text) => Number(text) || 0,
};

/** Tries of the dead-letter count's compare-and-set against other gateways. */
const COUNT_TRIES = 5;

/** Dead-letterings of one group waiting for the write under way to end. */
interface Pending {
  n: number;
  readonly written: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

const groupId = (g: GroupAddress) => JSON.stringify([g.namespace.key, g.topic, g.group]);

export class LeaseLedger {
  readonly #current: Records<number>;
  readonly #bounces: Records<number>;
  readonly #deadLettered: Records<number>;
  /** Per group with a count being written: the dead-letterings to add next (null: none). */
  readonly #counting = new Map<string, { next: Pending | null }>();

  constructor(records: RecordStore) {
    this.#current = new Records(records, {
      name: "d",
      codec: COUNT,
      ops: { get: "current_delivery", put: "record_delivery" },
    });
    // Shares its name with the by-ID ledger's cursor lease, which reads a bounce as a lease
    // that ended unseen (id-lease-ledger.ts).
    this.#bounces = new Records(records, {
      name: "c",
      codec: COUNT,
      ops: { get: "limit_bounce_get", put: "limit_bounce_put" },
    });
    this.#deadLettered = new Records(records, {
      name: "dl",
      codec: TALLY,
      ops: { get: "dead_lettered_count", put: "dead_lettered_count" },
    });
  }

  /** Delivery `count` of the message is now the current one (written on redelivery). */
  async recordDelivery(group: GroupAddress, streamSeq: number, count: number): Promise<void> {
    await this.#current.put(group, streamSeq, count);
  }

  /** The current delivery number of a message that was ever redelivered, else null. */
  currentDelivery(group: GroupAddress, streamSeq: number): Promise<number | null> {
    return this.#current.value(group, streamSeq);
  }

  /**
   * Delivery `count` of a message came past the group's concurrency limit and was released
   * without being handed out (for every gateway).
   */
  async noteLimitBounce(group: GroupAddress, streamSeq: number, count: number): Promise<void> {
    await this.#bounces.put(group, streamSeq, count);
  }

  /** The latest delivery of a message released that way, else null. */
  lastLimitBounce(group: GroupAddress, streamSeq: number): Promise<number | null> {
    return this.#bounces.value(group, streamSeq);
  }

  /**
   * One more message of the group moved to its dead-letter topic (best effort). One count is
   * written at a time per group on this gateway, adding every dead-lettering that came meanwhile:
   * a batch dead-lettered at once would otherwise race itself out of its compare-and-set tries.
   */
  noteDeadLettered(group: GroupAddress): Promise<void> {
    const k = groupId(group);
    let counting = this.#counting.get(k);
    const start = counting === undefined;
    if (!counting) this.#counting.set(k, (counting = { next: null }));
    counting.next ??= pending();
    counting.next.n++;
    const { written } = counting.next;
    if (start) void this.#writeCounts(k, group, counting);
    return written;
  }

  async #writeCounts(k: string, group: GroupAddress, counting: { next: Pending | null }) {
    for (let batch = counting.next; batch !== null; batch = counting.next) {
      counting.next = null;
      try {
        await this.#add(group, batch.n);
        batch.resolve();
      } catch (err) {
        batch.reject(err);
      }
    }
    this.#counting.delete(k);
  }

  /** Adds `n` to the group's count by compare-and-set (given up after COUNT_TRIES). */
  async #add(group: GroupAddress, n: number): Promise<void> {
    for (let attempt = 0; attempt < COUNT_TRIES; attempt++) {
      const e = await this.#deadLettered.get(group, null);
      const written = await this.#deadLettered.set(
        group,
        null,
        (e?.value ?? 0) + n,
        e?.revision ?? null,
      );
      if (written !== null) return;
    }
  }

  /** How many of the group's messages went to its dead-letter topic. */
  async deadLettered(group: GroupAddress): Promise<number> {
    return (await this.#deadLettered.value(group, null)) ?? 0;
  }
}

function pending(): Pending {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const written = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { n: 0, written, resolve, reject };
}

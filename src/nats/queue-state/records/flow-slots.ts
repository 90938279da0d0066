// Flow control's per-key slot records on JetStream (the FlowSlotLedger port, implemented here
// directly, not through the Broker): one KV entry per group and key, written by compare-and-set on its revision. Keys are
// "<stream>.<consumer>.<keyHash>", all hex and digits: a message's key (user text) reaches a
// subject only as its hash. The bucket's max age forgets a record nobody wrote for longer than
// the longest lease; which holders still hold is the domain's to say (src/queue/flow-control/),
// so every server version (2.9 on) serves it: no per-message TTL is needed.
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { KV } from "@nats-io/kv";
import type {
  FlowSlotLedger,
  KeyPace,
  KeySlots,
  KeySlotsEntry,
  KeySlotsPage,
  SlotHolder,
} from "../../../queue/broker.js";
import type { GroupAddress } from "../../../queue/namespace.js";
import { groupNames } from "../../core/naming.js";
import { storeOp, type ObserveOperation } from "../../core/store-op.js";
import { isWrongLastSequence, LeaseRecords } from "./lease-records.js";

export const FLOW_SLOTS_BUCKET = "VQS_FLOW_SLOTS";

const HASH = /^[0-9a-f]{16,64}$/;

export interface FlowSlotRecordsOptions {
  readonly replicas: number;
  /** A record untouched this long is forgotten (longer than any lease it holds). */
  readonly ttlMs: number;
  readonly timeoutMs: number;
  readonly region: string;
  /** Times each operation (vqs_jetstream_request_duration_seconds: flow_slots_get, _put, _list). */
  readonly observe: ObserveOperation;
}

export class FlowSlotRecords implements FlowSlotLedger {
  readonly #opts: FlowSlotRecordsOptions;
  readonly #js: JetStreamClient;
  /** The bucket, opened as the lease records' is (reads from the stream leader, a max age). */
  readonly #records: LeaseRecords;

  constructor(js: JetStreamClient, opts: FlowSlotRecordsOptions) {
    this.#opts = opts;
    this.#js = js;
    this.#records = new LeaseRecords(js, {
      name: FLOW_SLOTS_BUCKET,
      replicas: opts.replicas,
      ttlMs: opts.ttlMs,
      timeoutMs: opts.timeoutMs,
    });
  }

  #bucket(): Promise<KV> {
    return this.#records.bucket();
  }

  /**
   * Removes every record under `prefix` (`<stream>.>`: a removed topic's, `<stream>.<consumer>.>`:
   * a removed or sought group's): holders of leases that no cursor knows any more would hold
   * their keys until their deadlines.
   */
  forget(jsm: JetStreamManager, prefix: string): Promise<void> {
    return this.#records.forget(jsm, prefix);
  }

  getKeySlots(group: GroupAddress, keyHash: string): Promise<KeySlots | null> {
    return storeOp(this.#opts.observe, "flow_slots_get", async () => {
      const e = await (await this.#bucket()).get(this.#key(group, keyHash));
      if (!e || e.operation !== "PUT") return null;
      return { ...decode(e.string()), revision: e.revision };
    });
  }

  putKeySlots(
    group: GroupAddress,
    keyHash: string,
    holders: readonly SlotHolder[],
    expectedRevision: number | null,
    pace: KeyPace = NO_PACE,
  ): Promise<number | null> {
    const value = encode(holders, pace);
    return storeOp(this.#opts.observe, "flow_slots_put", async () => {
      const k = this.#key(group, keyHash);
      const kv = await this.#bucket();
      try {
        return expectedRevision === null
          ? await kv.create(k, value)
          : await kv.update(k, value, expectedRevision);
      } catch (err) {
        if (isWrongLastSequence(err)) return null;
        throw err;
      }
    });
  }

  /**
   * The group's records through one short-lived pull consumer on the bucket's stream, filtered
   * to the group's keys, last value per key: its info says how many there are, one fetch reads
   * up to `max` of them (4 API calls and `max` small messages, whatever the group's key count).
   */
  listKeySlots(group: GroupAddress, max: number): Promise<KeySlotsPage> {
    return storeOp(this.#opts.observe, "flow_slots_list", async () => {
      await this.#bucket();
      const g = groupNames(this.#opts.region, group);
      const prefix = `$KV.${FLOW_SLOTS_BUCKET}.${g.stream}.${g.consumer}.`;
      const stream = `KV_${FLOW_SLOTS_BUCKET}`;
      const jsm = await this.#js.jetstreamManager(false);
      const info = await jsm.consumers.add(stream, {
        filter_subject: `${prefix}*`,
        deliver_policy: DeliverPolicy.LastPerSubject,
        ack_policy: AckPolicy.None,
        inactive_threshold: nanos(30_000),
        mem_storage: true,
        num_replicas: 1,
      });
      try {
        const pending = info.num_pending;
        const records: KeySlotsEntry[] = [];
        const want = Math.min(max, pending);
        if (want > 0) {
          const c = await this.#js.consumers.get(stream, info.name);
          const msgs = await c.fetch({ max_messages: want, expires: this.#opts.timeoutMs });
          for await (const m of msgs) {
            const op = m.headers?.get("KV-Operation");
            const keyHash = m.subject.slice(prefix.length);
            if (op !== "DEL" && op !== "PURGE" && HASH.test(keyHash)) {
              records.push({ keyHash, ...decode(m.string()) });
            }
            if (m.info.pending === 0 || records.length >= want) break;
          }
        }
        return { records, more: pending > max };
      } finally {
        await jsm.consumers.delete(stream, info.name).catch(() => undefined);
      }
    });
  }

  #key(group: GroupAddress, keyHash: string): string {
    if (!HASH.test(keyHash)) throw new Error("a flow-control key must reach the store hashed");
    const g = groupNames(this.#opts.region, group);
    return `${g.stream}.${g.consumer}.${keyHash}`;
  }
}

const NO_PACE: KeyPace = { tatMs: null, order: [], doneSeq: 0 };

/**
 * A record as stored: a key without pace as the list of holders `[[seq, count, untilMs], ...]`
 * (what gateways before rate and order wrote and read), else `{h: holders, t: tat, o: order, d:
 * doneSeq}`.
 */
function encode(holders: readonly SlotHolder[], pace: KeyPace): string {
  const h = holders.map((x) => [x.streamSeq, x.deliveryCount, x.untilMs]);
  if (pace.tatMs === null && pace.order.length === 0 && pace.doneSeq === 0) {
    return JSON.stringify(h);
  }
  return JSON.stringify({ h, t: pace.tatMs, o: pace.order, d: pace.doneSeq });
}

/** A stored value back to a record; anything unreadable holds nothing and paces nothing. */
function decode(text: string): Omit<KeySlots, "revision"> {
  try {
    const v = JSON.parse(text) as unknown;
    if (Array.isArray(v)) return { holders: holdersOf(v), ...NO_PACE };
    if (typeof v !== "object" || v === null) return { holders: [], ...NO_PACE };
    const r = v as { h?: unknown; t?: unknown; o?: unknown; d?: unknown };
    const order = Array.isArray(r.o) ? r.o.filter((n): n is number => Number.isSafeInteger(n)) : [];
    return {
      holders: Array.isArray(r.h) ? holdersOf(r.h) : [],
      tatMs: typeof r.t === "number" && Number.isFinite(r.t) ? r.t : null,
      order,
      doneSeq: typeof r.d === "number" && Number.isSafeInteger(r.d) ? r.d : 0,
    };
  } catch {
    return { holders: [], ...NO_PACE };
  }
}

function holdersOf(v: readonly unknown[]): SlotHolder[] {
  return v.flatMap((h: unknown) =>
    Array.isArray(h) && h.length === 3 && h.every((n) => Number.isSafeInteger(n))
      ? [{ streamSeq: h[0] as number, deliveryCount: h[1] as number, untilMs: h[2] as number }]
      : [],
  );
}

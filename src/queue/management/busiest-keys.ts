// A group's busiest flow-control keys (GET /api/v3/topic/{topic}/consumer/{group}/keys), region-
// wide and with bounded work whatever the number of keys: per key, its messages in flight (the
// live holders of its slot record, every gateway's) and waiting (counted in a sample: the group's
// oldest unacknowledged messages, as RabbitMQ samples its figures). Keys are stored hashed; a
// key's value is read from a message of the key. See docs/api.md, "Busiest keys".
import { AppError } from "../../errors.js";
import type { FlowSlotLedger, GroupCursor, MessageLog } from "../broker.js";
import { flowKeyHash } from "../flow-control/flow-keys.js";
import type { GroupAddress } from "../namespace.js";
import type { FlowControlSettings } from "../settings/consumer-settings.js";
import type { BusiestKeys, BusyKey } from "../../api/management.js";

/** Key records one request reads (one fetch); a group with more is listed in part. */
export const KEY_RECORDS_READ = 1000;
/** Messages past the group's acknowledgement floor sampled for `waiting`. */
export const WAITING_SAMPLE_MESSAGES = 1000;
/** Payload bytes the sample reads, all reads together (and per read, a quarter of it). */
const WAITING_SAMPLE_BYTES = 4 * 1024 * 1024;
/** A key's value shown up to this many characters (`keyTruncated` says it was cut). */
export const KEY_SHOWN_CHARS = 256;

export interface BusiestKeysDeps {
  readonly slots: Pick<FlowSlotLedger, "listKeySlots">;
  readonly broker: Pick<MessageLog, "readTopic"> & Pick<GroupCursor, "progress">;
  readonly flowOf: (group: GroupAddress) => FlowControlSettings | null;
  readonly now: () => number;
}

interface Tally {
  readonly keyHash: string;
  inFlight: number;
  waiting: number;
  readonly holding: Set<number>;
  value: string | null;
}

/** The group's `limit` busiest keys (in flight and waiting together, most first). */
export async function busiestKeys(
  d: BusiestKeysDeps,
  group: GroupAddress,
  limit: number,
): Promise<BusiestKeys> {
  const progress = await d.broker.progress(group);
  if (progress === null) throw new AppError("group_not_found");
  const flow = d.flowOf(group);
  if (flow === null) {
    return {
      flowControl: null,
      keys: [],
      keyRecords: { read: 0, complete: true },
      waitingSample: { messages: 0, fromSequence: progress.ackFloorSeq + 1, complete: true },
    };
  }
  const [page, sample] = await Promise.all([
    d.slots.listKeySlots(group, KEY_RECORDS_READ),
    readSample(d, group, progress.ackFloorSeq + 1),
  ]);
  const now = d.now();
  const tallies = new Map<string, Tally>();
  const tally = (keyHash: string): Tally => {
    let t = tallies.get(keyHash);
    if (!t) {
      t = { keyHash, inFlight: 0, waiting: 0, holding: new Set(), value: null };
      tallies.set(keyHash, t);
    }
    return t;
  };
  for (const r of page.records) {
    const live = r.holders.filter((h) => h.untilMs > now);
    if (live.length === 0) continue;
    const t = tally(r.keyHash);
    t.inFlight = live.length;
    for (const h of live) t.holding.add(h.streamSeq);
  }
  for (const { streamSeq, message } of sample.messages) {
    const k = flowKeyHash(message, flow);
    if (k === null) continue;
    const t = tally(k);
    if (!t.holding.has(streamSeq)) t.waiting++;
    t.value ??= message.headers[flow.key] ?? null;
  }
  const top = [...tallies.values()]
    .sort(
      (a, b) =>
        b.inFlight + b.waiting - (a.inFlight + a.waiting) ||
        b.waiting - a.waiting ||
        (a.keyHash < b.keyHash ? -1 : 1),
    )
    .slice(0, limit);
  // A key seen in flight only: its value from one of its holders' messages (one read each).
  await Promise.all(
    top
      .filter((t) => t.value === null)
      .map(async (t) => {
        for (const seq of [...t.holding].slice(0, 2)) {
          const [m] = await d.broker.readTopic(group, seq, 1);
          if (m && m.streamSeq === seq && flowKeyHash(m.message, flow) === t.keyHash) {
            t.value = m.message.headers[flow.key] ?? null;
            return;
          }
        }
      }),
  );
  return {
    flowControl: flow,
    keys: top.map(view),
    keyRecords: { read: page.records.length, complete: !page.more },
    waitingSample: {
      messages: sample.messages.length,
      fromSequence: progress.ackFloorSeq + 1,
      complete: sample.complete,
    },
  };
}

function view(t: Tally): BusyKey {
  const cut = t.value !== null && t.value.length > KEY_SHOWN_CHARS;
  return {
    key: cut ? t.value!.slice(0, KEY_SHOWN_CHARS) : t.value,
    keyTruncated: cut,
    keyHash: t.keyHash,
    inFlight: t.inFlight,
    waiting: t.waiting,
  };
}

/** The group's oldest messages from `fromSeq`, WAITING_SAMPLE_MESSAGES at most, bytes bounded. */
async function readSample(
  d: BusiestKeysDeps,
  group: GroupAddress,
  fromSeq: number,
): Promise<{
  readonly messages: Awaited<ReturnType<MessageLog["readTopic"]>>;
  readonly complete: boolean;
}> {
  const messages: Awaited<ReturnType<MessageLog["readTopic"]>> = [];
  let seq = fromSeq;
  let bytes = 0;
  while (messages.length < WAITING_SAMPLE_MESSAGES && bytes < WAITING_SAMPLE_BYTES) {
    const batch = await d.broker.readTopic(
      group,
      seq,
      WAITING_SAMPLE_MESSAGES - messages.length,
      WAITING_SAMPLE_BYTES / 4,
    );
    if (batch.length === 0) return { messages, complete: true };
    for (const m of batch) {
      messages.push(m);
      bytes += m.message.payload.byteLength;
    }
    seq = batch.at(-1)!.streamSeq + 1;
  }
  return { messages, complete: false };
}

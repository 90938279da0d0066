// The records port: small text records kept beside a group's cursor, each under its group and a
// name, written with compare-and-set and forgotten a fixed time after their last write (the
// store's TTL). The ledgers (src/queue/ledgers/) give them their meaning and their encoding
// (typed-records.ts); src/nats keeps them in a KV bucket, src/memory in a map, both held to
// test/contract/records-contract.ts.
import type { GroupAddress } from "../namespace.js";

/**
 * Where a record is: its group, the message it is about (a stream sequence; null for a record of
 * the whole group) and its name, dot-separated tokens of letters, digits, `_` and `-` (never
 * user text: hash a key first).
 */
export interface RecordAddress {
  readonly group: GroupAddress;
  readonly seq: number | null;
  readonly name: string;
}

export interface RecordEntry {
  readonly text: string;
  /** Grows with every write of the store; what `update` expects. */
  readonly revision: number;
  /** Store time of the last write (ms). */
  readonly writtenAtMs: number;
}

export interface RecordStore {
  /** How long a record lives after its last write (ms). */
  readonly ttlMs: number;
  /** `op` names the store operation in timings (vqs_jetstream_request_duration_seconds). */
  get(at: RecordAddress, op: string): Promise<RecordEntry | null>;
  /** Writes whatever is there; the new revision. */
  put(at: RecordAddress, text: string, op: string): Promise<number>;
  /** First writer wins: the new revision, or null when the record exists. */
  create(at: RecordAddress, text: string, op: string): Promise<number | null>;
  /** Compare-and-set: the new revision, or null when the record's revision is not `revision`. */
  update(at: RecordAddress, text: string, revision: number, op: string): Promise<number | null>;
  /** Removes the record (none: nothing happens). */
  delete(at: RecordAddress, op: string): Promise<void>;
}

/** A record name's grammar (RecordAddress.name). */
export const RECORD_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** Throws on an address no store may take (a malformed name or sequence: a programming error). */
export function checkRecordAddress(at: RecordAddress): void {
  if (!RECORD_NAME.test(at.name)) throw new Error(`not a record name: ${at.name}`);
  if (at.seq !== null && !(Number.isSafeInteger(at.seq) && at.seq > 0)) {
    throw new Error(`not a stream sequence: ${at.seq}`);
  }
}

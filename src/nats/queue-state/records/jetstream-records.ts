// The records port (src/queue/records/record-store.ts) on the region's VQS_LEASES KV bucket: a
// record of a group's message is `<stream>.<consumer>.<seq>.<name>`, one of the whole group
// `<stream>.<consumer>.<name>` (all hex, digits and the ledgers' fixed names: no user text). The
// bucket's TTL is the records'; compare-and-set is KV create and update.
import type { KvEntry } from "@nats-io/kv";
import {
  checkRecordAddress,
  type RecordAddress,
  type RecordEntry,
  type RecordStore,
} from "../../../queue/records/record-store.js";
import { groupNames } from "../../core/naming.js";
import { storeOp, type ObserveOperation } from "../../core/store-op.js";
import { isWrongLastSequence, type LeaseRecords } from "./lease-records.js";

export interface JetStreamRecordsDeps {
  readonly bucket: Pick<LeaseRecords, "bucket">;
  readonly region: string;
  readonly ttlMs: number;
  readonly observe: ObserveOperation;
}

export class JetStreamRecords implements RecordStore {
  readonly ttlMs: number;
  readonly #d: JetStreamRecordsDeps;

  constructor(deps: JetStreamRecordsDeps) {
    this.#d = deps;
    this.ttlMs = deps.ttlMs;
  }

  async get(at: RecordAddress, op: string): Promise<RecordEntry | null> {
    const k = this.#key(at);
    return await storeOp(this.#d.observe, op, async () => {
      const e = await (await this.#d.bucket.bucket()).get(k);
      return toEntry(e);
    });
  }

  async put(at: RecordAddress, text: string, op: string): Promise<number> {
    const k = this.#key(at);
    return await storeOp(this.#d.observe, op, async () =>
      (await this.#d.bucket.bucket()).put(k, text),
    );
  }

  async create(at: RecordAddress, text: string, op: string): Promise<number | null> {
    const k = this.#key(at);
    return await storeOp(this.#d.observe, op, async () =>
      casOrNull((await this.#d.bucket.bucket()).create(k, text)),
    );
  }

  async update(
    at: RecordAddress,
    text: string,
    revision: number,
    op: string,
  ): Promise<number | null> {
    const k = this.#key(at);
    return await storeOp(this.#d.observe, op, async () =>
      casOrNull((await this.#d.bucket.bucket()).update(k, text, revision)),
    );
  }

  async delete(at: RecordAddress, op: string): Promise<void> {
    const k = this.#key(at);
    return await storeOp(this.#d.observe, op, async () =>
      (await this.#d.bucket.bucket()).delete(k),
    );
  }

  #key(at: RecordAddress): string {
    checkRecordAddress(at);
    const g = groupNames(this.#d.region, at.group);
    return at.seq === null
      ? `${g.stream}.${g.consumer}.${at.name}`
      : `${g.stream}.${g.consumer}.${at.seq}.${at.name}`;
  }
}

function toEntry(e: KvEntry | null): RecordEntry | null {
  if (!e || e.operation !== "PUT") return null;
  return { text: e.string(), revision: e.revision, writtenAtMs: e.created.getTime() };
}

async function casOrNull(write: Promise<number>): Promise<number | null> {
  try {
    return await write;
  } catch (err) {
    if (isWrongLastSequence(err)) return null;
    throw err;
  }
}

// One kind of record on the records port, typed by its codec: what a ledger reads and writes
// (a count, a lease), with the store's compare-and-set and the names its timings carry.
import type { GroupAddress } from "../namespace.js";
import type { RecordAddress, RecordStore } from "./record-store.js";

export interface RecordCodec<T> {
  encode(value: T): string;
  decode(text: string): T;
}

export interface RecordKind<T> {
  /** The record's name within its message or group (RecordAddress.name). */
  readonly name: string;
  readonly codec: RecordCodec<T>;
  /** The store operations' names in timings: reads, and writes of any sort. */
  readonly ops: { readonly get: string; readonly put: string };
}

export interface Versioned<T> {
  readonly value: T;
  readonly revision: number;
  readonly writtenAtMs: number;
}

/** A count, as the records keep it (decimal text; what is not a number reads as NaN). */
export const COUNT: RecordCodec<number> = {
  encode: (n) => String(n),
  decode: (text) => Number(text),
};

export class Records<T> {
  readonly #store: RecordStore;
  readonly #kind: RecordKind<T>;

  constructor(store: RecordStore, kind: RecordKind<T>) {
    this.#store = store;
    this.#kind = kind;
  }

  /** `seq`: the stream sequence of the message it is about; null: a record of the group. */
  async get(group: GroupAddress, seq: number | null): Promise<Versioned<T> | null> {
    const e = await this.#store.get(this.#at(group, seq), this.#kind.ops.get);
    if (e === null) return null;
    return {
      value: this.#kind.codec.decode(e.text),
      revision: e.revision,
      writtenAtMs: e.writtenAtMs,
    };
  }

  /** The value alone, or null. */
  async value(group: GroupAddress, seq: number | null): Promise<T | null> {
    return (await this.get(group, seq))?.value ?? null;
  }

  put(group: GroupAddress, seq: number | null, value: T): Promise<number> {
    return this.#store.put(
      this.#at(group, seq),
      this.#kind.codec.encode(value),
      this.#kind.ops.put,
    );
  }

  /** Compare-and-set: `revision` null creates. The new revision, or null when another won. */
  set(
    group: GroupAddress,
    seq: number | null,
    value: T,
    revision: number | null,
  ): Promise<number | null> {
    const at = this.#at(group, seq);
    const text = this.#kind.codec.encode(value);
    return revision === null
      ? this.#store.create(at, text, this.#kind.ops.put)
      : this.#store.update(at, text, revision, this.#kind.ops.put);
  }

  delete(group: GroupAddress, seq: number | null): Promise<void> {
    return this.#store.delete(this.#at(group, seq), this.#kind.ops.put);
  }

  #at(group: GroupAddress, seq: number | null): RecordAddress {
    return { group, seq, name: this.#kind.name };
  }
}

// The records port (src/queue/records/record-store.ts) in memory, on an injected clock: one map
// of text records with the store's compare-and-set and its TTL, what the lease, by-ID lease and
// push ledgers keep (held to test/contract/records-contract.ts, as the KV bucket is).
import {
  checkRecordAddress,
  type RecordAddress,
  type RecordEntry,
  type RecordStore,
} from "../queue/records/record-store.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";

export interface MemoryRecordsOptions {
  readonly now: () => number;
  /** How long a record lives after its last write (ms). */
  readonly ttlMs: number;
}

const topicPrefix = (t: TopicAddress) => JSON.stringify([t.namespace.key, t.topic]) + "#";
const groupPrefix = (g: GroupAddress) => `${topicPrefix(g)}${JSON.stringify(g.group)}#`;

export class MemoryRecords implements RecordStore {
  readonly ttlMs: number;
  readonly #now: () => number;
  readonly #records = new Map<string, RecordEntry>();
  #revision = 0;

  constructor(o: MemoryRecordsOptions) {
    this.#now = o.now;
    this.ttlMs = o.ttlMs;
  }

  // Each answers in a promise, a bad address too (rejected), as the KV bucket's do.

  get(at: RecordAddress): Promise<RecordEntry | null> {
    return answer(() => this.#live(key(at)));
  }

  put(at: RecordAddress, text: string): Promise<number> {
    return answer(() => this.#write(key(at), text));
  }

  create(at: RecordAddress, text: string): Promise<number | null> {
    return answer(() => {
      const k = key(at);
      return this.#live(k) === null ? this.#write(k, text) : null;
    });
  }

  update(at: RecordAddress, text: string, revision: number): Promise<number | null> {
    return answer(() => {
      const k = key(at);
      return this.#live(k)?.revision === revision ? this.#write(k, text) : null;
    });
  }

  delete(at: RecordAddress): Promise<void> {
    return answer(() => void this.#records.delete(key(at)));
  }

  /** Removes every record of the topic's groups (the topic was removed). */
  forgetTopic(topic: TopicAddress): void {
    this.#forget(topicPrefix(topic));
  }

  /** Removes every record of the group (the group was removed, or sought). */
  forgetGroup(group: GroupAddress): void {
    this.#forget(groupPrefix(group));
  }

  #forget(prefix: string): void {
    for (const k of [...this.#records.keys()]) if (k.startsWith(prefix)) this.#records.delete(k);
  }

  #live(k: string): RecordEntry | null {
    const e = this.#records.get(k);
    if (e === undefined) return null;
    if (e.writtenAtMs + this.ttlMs <= this.#now()) {
      this.#records.delete(k);
      return null;
    }
    return e;
  }

  #write(k: string, text: string): number {
    const revision = ++this.#revision;
    this.#records.set(k, { text, revision, writtenAtMs: this.#now() });
    return revision;
  }
}

function answer<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

function key(at: RecordAddress): string {
  checkRecordAddress(at);
  return `${groupPrefix(at.group)}${at.seq ?? ""}#${at.name}`;
}

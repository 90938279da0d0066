// One contract for the records port (src/queue/records/record-store.ts), run against the
// in-memory twin (memory.test.ts) and the VQS_LEASES bucket on a real nats-server
// (jetstream.test.ts): text records under a group and a name, compare-and-set, and the TTL.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { RecordAddress, RecordStore } from "../../src/queue/records/record-store.js";
import { makeNamespace, type GroupAddress } from "../../src/queue/namespace.js";

export interface RecordsUnderTest {
  readonly records: () => RecordStore;
  /** A store of the same kind whose records live `ttlMs` (a second or two) after their write. */
  readonly shortLived: () => RecordStore;
  /** Lets `ms` of the store's time pass. */
  advance(ms: number): Promise<void>;
  /** How often a wait for the TTL is tried again before the check fails. */
  readonly patience: number;
}

const namespace = makeNamespace("records-team", "records-project", "production", null);

function group(name = "g"): GroupAddress {
  return { namespace, topic: `r_${randomBytes(5).toString("hex")}`, group: name };
}

export function recordsContract(name: string, under: RecordsUnderTest): void {
  describe(`records port contract: ${name}`, () => {
    it("keeps a record per group, message and name, and reads back what was written", async () => {
      const r = under.records();
      const g = group();
      const at: RecordAddress = { group: g, seq: 5, name: "x" };
      expect(await r.get(at, "t")).toBeNull();
      const rev = await r.put(at, "hello", "t");
      const got = await r.get(at, "t");
      expect(got).toMatchObject({ text: "hello", revision: rev });
      expect(await r.get({ ...at, seq: 6 }, "t")).toBeNull();
      expect(await r.get({ ...at, name: "y" }, "t")).toBeNull();
      expect(await r.get({ ...at, seq: null }, "t")).toBeNull();
      expect(await r.get({ ...at, group: { ...g, group: "other" } }, "t")).toBeNull();
      expect(await r.get({ ...at, group: { ...g, topic: `${g.topic}x` } }, "t")).toBeNull();
      await r.put({ ...at, seq: null }, "of the group", "t");
      expect((await r.get({ ...at, seq: null }, "t"))?.text).toBe("of the group");
      expect((await r.get(at, "t"))?.text).toBe("hello");
    });

    it("creates once, and updates only at the revision read", async () => {
      const r = under.records();
      const at: RecordAddress = { group: group(), seq: 1, name: "cas" };
      const first = await r.create(at, "a", "t");
      expect(first).not.toBeNull();
      expect(await r.create(at, "b", "t")).toBeNull(); // another writer won
      const second = await r.update(at, "c", first!, "t");
      expect(second).not.toBeNull();
      expect(second).toBeGreaterThan(first!);
      expect(await r.update(at, "d", first!, "t")).toBeNull(); // a stale revision
      expect(await r.get(at, "t")).toMatchObject({ text: "c", revision: second });
      const put = await r.put(at, "e", "t");
      expect(await r.update(at, "f", second!, "t")).toBeNull(); // a put moved it on
      expect(await r.update(at, "g", put, "t")).not.toBeNull();
    });

    it("removes a record, after which it can be created again", async () => {
      const r = under.records();
      const at: RecordAddress = { group: group(), seq: 2, name: "gone" };
      await r.delete(at, "t"); // none there: nothing happens
      await r.put(at, "a", "t");
      await r.delete(at, "t");
      expect(await r.get(at, "t")).toBeNull();
      expect(await r.create(at, "b", "t")).not.toBeNull();
      expect((await r.get(at, "t"))?.text).toBe("b");
    });

    it("stamps each write with the store's time", async () => {
      const r = under.records();
      const at: RecordAddress = { group: group(), seq: 3, name: "t" };
      await r.put(at, "a", "t");
      const first = (await r.get(at, "t"))!.writtenAtMs;
      await under.advance(20);
      await r.put(at, "b", "t");
      expect((await r.get(at, "t"))!.writtenAtMs).toBeGreaterThan(first);
    });

    it("refuses names and sequences no key may carry", async () => {
      const r = under.records();
      const g = group();
      await expect(r.put({ group: g, seq: 1, name: "a.>" }, "x", "t")).rejects.toThrow();
      await expect(r.put({ group: g, seq: 1, name: "a b" }, "x", "t")).rejects.toThrow();
      await expect(r.put({ group: g, seq: 1.5, name: "a" }, "x", "t")).rejects.toThrow();
      await expect(r.put({ group: g, seq: 0, name: "a" }, "x", "t")).rejects.toThrow();
    });

    it("forgets a record its TTL after its last write", async () => {
      const r = under.shortLived();
      const at: RecordAddress = { group: group(), seq: 4, name: "ttl" };
      await r.put(at, "a", "t");
      expect((await r.get(at, "t"))?.text).toBe("a");
      let gone = false;
      for (let i = 0; i < under.patience && !gone; i++) {
        await under.advance(r.ttlMs / 2);
        gone = (await r.get(at, "t")) === null;
      }
      expect(gone).toBe(true);
      expect(await r.create(at, "b", "t")).not.toBeNull();
    });
  });
}

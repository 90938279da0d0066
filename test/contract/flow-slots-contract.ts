// One contract for flow control's per-key slot records (FlowSlotLedger, src/queue/broker.ts), run
// against the in-memory twin (memory.test.ts) and the JetStream KV bucket on a real nats-server
// (jetstream.test.ts): compare-and-set on the revision, records per group and key, holders kept
// as written, and a record nobody writes forgotten after the store's time to live.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { FlowSlotLedger } from "../../src/queue/broker.js";
import { FLOW_RECORD_TTL_MS } from "../../src/queue/limits.js";
import { makeNamespace, type GroupAddress } from "../../src/queue/namespace.js";

export interface FlowSlotsUnderTest {
  readonly ledger: () => FlowSlotLedger;
  /**
   * Either lets `ms` of the store's time pass (the twin), or says how long the store keeps a
   * record nobody writes (a real server, whose hours cannot be waited for: its bucket's max age).
   */
  readonly forgetting:
    | { readonly advance: (ms: number) => Promise<void> }
    | { readonly keptMs: () => Promise<number> };
}

const namespace = makeNamespace("contract-team", "contract-project", "production", null);
const group = (name = "g"): GroupAddress => ({
  namespace,
  topic: `f_${randomBytes(5).toString("hex")}`,
  group: name,
});
const hash = () => randomBytes(16).toString("hex");
/** A record written without pace reads back with none. */
const none = { tatMs: null, order: [], doneSeq: 0 };
const holder = (streamSeq: number, untilMs = 1_900_000_000_000) => ({
  streamSeq,
  deliveryCount: 1,
  untilMs,
});

export function flowSlotsContract(name: string, under: FlowSlotsUnderTest): void {
  describe(`flow slot records contract: ${name}`, () => {
    it("has no record for a key never written, and creates one only once", async () => {
      const l = under.ledger();
      const g = group();
      const k = hash();
      expect(await l.getKeySlots(g, k)).toBeNull();
      const rev = await l.putKeySlots(g, k, [holder(1)], null);
      expect(rev).not.toBeNull();
      expect(await l.putKeySlots(g, k, [holder(2)], null)).toBeNull(); // created already
      expect(await l.getKeySlots(g, k)).toEqual({ holders: [holder(1)], ...none, revision: rev });
    });

    it("writes only over the revision it read: a racing writer loses", async () => {
      const l = under.ledger();
      const g = group();
      const k = hash();
      const rev = (await l.putKeySlots(g, k, [holder(1)], null))!;
      const mine = await l.putKeySlots(g, k, [holder(1), holder(2)], rev);
      expect(mine).not.toBeNull();
      expect(mine).not.toBe(rev);
      expect(await l.putKeySlots(g, k, [holder(3)], rev)).toBeNull(); // read before mine
      const now = await l.getKeySlots(g, k);
      expect(now?.holders).toEqual([holder(1), holder(2)]);
      // Every holder field as written, an empty record too.
      expect(await l.putKeySlots(g, k, [], mine)).not.toBeNull();
      expect((await l.getKeySlots(g, k))?.holders).toEqual([]);
    });

    it("keeps each group's and key's records apart", async () => {
      const l = under.ledger();
      const g = group();
      const other = { ...g, group: "other" };
      const [k1, k2] = [hash(), hash()];
      await l.putKeySlots(g, k1, [holder(1)], null);
      expect(await l.getKeySlots(g, k2)).toBeNull();
      expect(await l.getKeySlots(other, k1)).toBeNull();
      expect(await l.putKeySlots(other, k1, [holder(9)], null)).not.toBeNull();
      expect((await l.getKeySlots(g, k1))?.holders).toEqual([holder(1)]);
    });

    it("keeps a key's pace (rate TAT, order, last settled) with its holders, in one write", async () => {
      const l = under.ledger();
      const g = group();
      const k = hash();
      const pace = { tatMs: 1_900_000_000_123.5, order: [7, 9, 12], doneSeq: 5 };
      const rev = (await l.putKeySlots(g, k, [holder(7)], null, pace))!;
      expect(await l.getKeySlots(g, k)).toEqual({ holders: [holder(7)], ...pace, revision: rev });
      // A racing writer loses the pace as it loses the holders.
      const next = { tatMs: 1_900_000_000_223.5, order: [9, 12], doneSeq: 7 };
      const rev2 = (await l.putKeySlots(g, k, [], rev, next))!;
      expect(await l.putKeySlots(g, k, [holder(1)], rev, pace)).toBeNull();
      expect(await l.getKeySlots(g, k)).toEqual({ holders: [], ...next, revision: rev2 });
      // Written without pace again (a gateway of the version before): none.
      const rev3 = (await l.putKeySlots(g, k, [holder(9)], rev2))!;
      expect(await l.getKeySlots(g, k)).toEqual({ holders: [holder(9)], ...none, revision: rev3 });
    });

    it("forgets a record nobody wrote for its time to live", async () => {
      const l = under.ledger();
      const g = group();
      const k = hash();
      const rev = (await l.putKeySlots(g, k, [holder(1)], null))!;
      const f = under.forgetting;
      if ("keptMs" in f) {
        expect(await f.keptMs()).toBe(FLOW_RECORD_TTL_MS);
        return;
      }
      await f.advance(FLOW_RECORD_TTL_MS - 1000);
      expect((await l.getKeySlots(g, k))?.revision).toBe(rev);
      await f.advance(2000);
      expect(await l.getKeySlots(g, k)).toBeNull();
      expect(await l.putKeySlots(g, k, [holder(2)], rev)).toBeNull(); // over a forgotten one
      expect(await l.putKeySlots(g, k, [holder(2)], null)).not.toBeNull();
    });

    it("lists a group's records, bounded, with their holders, and says when there are more", async () => {
      const l = under.ledger();
      const g = group();
      const other = { ...g, group: "other" };
      expect(await l.listKeySlots(g, 10)).toEqual({ records: [], more: false });
      const keys = [hash(), hash(), hash()];
      const first = (await l.putKeySlots(g, keys[0]!, [holder(1)], null))!;
      await l.putKeySlots(g, keys[0]!, [holder(1), holder(4)], first); // the last value is listed
      const pace = { tatMs: 1_900_000_000_500, order: [2, 3], doneSeq: 1 };
      await l.putKeySlots(g, keys[1]!, [holder(2)], null, pace);
      await l.putKeySlots(g, keys[2]!, [], null);
      await l.putKeySlots(other, hash(), [holder(9)], null);

      const all = await l.listKeySlots(g, 10);
      expect(all.more).toBe(false);
      const byKey = (p: typeof all) =>
        Object.fromEntries(p.records.map((r) => [r.keyHash, r.holders]));
      expect(byKey(all)).toEqual({
        [keys[0]!]: [holder(1), holder(4)],
        [keys[1]!]: [holder(2)],
        [keys[2]!]: [],
      });
      const paces = Object.fromEntries(
        all.records.map((r) => [r.keyHash, { tatMs: r.tatMs, order: r.order, doneSeq: r.doneSeq }]),
      );
      expect(paces).toEqual({ [keys[0]!]: none, [keys[1]!]: pace, [keys[2]!]: none });
      const some = await l.listKeySlots(g, 2);
      expect(some.more).toBe(true);
      expect(some.records).toHaveLength(2);
      for (const r of some.records) expect(byKey(all)[r.keyHash]).toEqual(r.holders);
      expect(await l.listKeySlots(g, 3)).toMatchObject({ more: false });
    });
  });
}

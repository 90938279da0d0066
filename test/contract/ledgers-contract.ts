// The ledgers of src/queue/ledgers/ over a records store, run on the in-memory twin
// (memory.test.ts) and on VQS_LEASES on a real nats-server (jetstream.test.ts): each ledger is
// written once, so this holds the two stores to what the ledgers read back of their writes.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { CutLeaseLog } from "../../src/queue/broker.js";
import { IdLeaseLedger } from "../../src/queue/ledgers/id-lease-ledger.js";
import { LeaseLedger } from "../../src/queue/ledgers/lease-ledger.js";
import { PushLedger } from "../../src/queue/ledgers/push-ledger.js";
import { makeNamespace, type GroupAddress } from "../../src/queue/namespace.js";
import type { RecordStore } from "../../src/queue/records/record-store.js";

export interface LedgersUnderTest {
  readonly records: () => RecordStore;
  readonly cuts: () => CutLeaseLog;
  /** The store's clock (ms). */
  readonly now: () => number;
}

const namespace = makeNamespace("ledgers-team", "ledgers-project", "production", null);

function group(): GroupAddress {
  return { namespace, topic: `l_${randomBytes(5).toString("hex")}`, group: "g" };
}

export function ledgersContract(name: string, under: LedgersUnderTest): void {
  describe(`ledgers contract: ${name}`, () => {
    it("keeps which delivery is current, bounces at the limit and dead-letter counts", async () => {
      const leases = new LeaseLedger(under.records());
      const g = group();
      expect(await leases.currentDelivery(g, 3)).toBeNull();
      await leases.recordDelivery(g, 3, 2);
      expect(await leases.currentDelivery(g, 3)).toBe(2);
      await leases.recordDelivery(g, 3, 4);
      expect(await leases.currentDelivery(g, 3)).toBe(4);
      expect(await leases.lastLimitBounce(g, 3)).toBeNull();
      await leases.noteLimitBounce(g, 3, 5);
      expect(await leases.lastLimitBounce(g, 3)).toBe(5);
      expect(await leases.deadLettered(g)).toBe(0);
      await Promise.all([leases.noteDeadLettered(g), leases.noteDeadLettered(g)]);
      await leases.noteDeadLettered(g);
      expect(await leases.deadLettered(g)).toBe(3);
      expect(await leases.deadLettered({ ...g, group: "other" })).toBe(0);
    });

    it("keeps ID leases by compare-and-set, the cursor's leases and the group's mark", async () => {
      const records = under.records();
      const ids = new IdLeaseLedger(records, { now: under.now, markWaitMs: 0 });
      const g = group();
      expect(await ids.usesIdLeases(g)).toBe(false);
      await ids.markIdLeases(g);
      expect(await ids.usesIdLeases(g)).toBe(true);
      // Another gateway's ledger reads the mark from the store.
      expect(
        await new IdLeaseLedger(records, { now: under.now, markWaitMs: 0 }).usesIdLeases(g),
      ).toBe(true);
      const lease = {
        state: "leased",
        deadlineMs: 1000,
        count: 1,
        bounces: 0,
        leaseId: 7,
      } as const;
      expect(await ids.getIdLease(g, 5)).toBeNull();
      const rev = await ids.putIdLease(g, 5, lease, null);
      expect(rev).not.toBeNull();
      expect(await ids.putIdLease(g, 5, lease, null)).toBeNull(); // another request won
      const next = await ids.putIdLease(g, 5, { ...lease, state: "acked" }, rev);
      expect(next).not.toBeNull();
      expect(await ids.putIdLease(g, 5, lease, rev)).toBeNull(); // stale revision
      expect(await ids.getIdLease(g, 5)).toEqual({ ...lease, state: "acked", revision: next });
      const cursor = { count: 2, deadlineMs: 5000, acked: false };
      await ids.putCursorLease(g, 5, cursor);
      expect(await ids.getCursorLease(g, 5)).toEqual(cursor);
      expect(await ids.getCursorLease(g, 6)).toBeNull();
      // A bounce at the concurrency limit shares the cursor's record: a delivery that ended unseen.
      await new LeaseLedger(records).noteLimitBounce(g, 6, 3);
      expect(await ids.getCursorLease(g, 6)).toEqual({ count: 2, deadlineMs: 0, acked: false });
    });

    it("forgets its cached by-ID mark of a group removed, alone or with its topic", async () => {
      const records = under.records();
      const ids = new IdLeaseLedger(records, { now: under.now, markWaitMs: 0 });
      const g = group();
      const h = { ...g, group: "h" };
      await ids.markIdLeases(g);
      await ids.markIdLeases(h);
      // The store forgets the group's records (as deleting a group does), then the ledger its cache.
      await records.delete({ group: g, seq: null, name: "byid" }, "t");
      expect(await ids.usesIdLeases(g)).toBe(true); // cached
      ids.forget(g);
      expect(await ids.usesIdLeases(g)).toBe(false);
      await records.delete({ group: h, seq: null, name: "byid" }, "t");
      ids.forget({ namespace: h.namespace, topic: h.topic });
      expect(await ids.usesIdLeases(h)).toBe(false);
    });

    it("knows a lease cut short through its handle, that delivery only", async () => {
      const cuts = under.cuts();
      const g = group();
      const lease = { streamSeq: 3, deliverySeq: 9, deliveryCount: 2 };
      expect(cuts.wasCut(g, lease)).toBe(false);
      await cuts.markCut(g, lease, Date.now() + 60_000);
      expect(cuts.wasCut(g, lease)).toBe(true);
      expect(cuts.wasCut(g, { ...lease, deliveryCount: 3 })).toBe(false);
      expect(cuts.wasCut({ ...g, group: "other" }, lease)).toBe(false);
    });

    it("keeps a pushed message's holdbacks and the delivery its handler leased", async () => {
      const push = new PushLedger(under.records());
      const g = group();
      expect(await push.holdbacks(g, 3)).toBe(0);
      await push.holdBack(g, 3);
      await push.holdBack(g, 3);
      expect(await push.holdbacks(g, 3)).toBe(2);
      await push.holdBack(g, 3, 5); // counted already: one more than that
      expect(await push.holdbacks(g, 3)).toBe(6);
      expect(await push.holdbacks(g, 4)).toBe(0);
      expect(await push.handlerLease(g, 3)).toBeNull();
      await push.noteHandlerLease(g, 3, 2);
      expect(await push.handlerLease(g, 3)).toBe(2);
      expect(await push.handlerLease({ ...g, group: "other" }, 3)).toBeNull();
    });
  });
}

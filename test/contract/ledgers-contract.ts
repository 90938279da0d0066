// The ledgers of src/queue/ledgers/ over a records store, run on the in-memory twin
// (memory.test.ts) and on VQS_LEASES on a real nats-server (jetstream.test.ts): each ledger is
// written once, so this holds the two stores to what the ledgers read back of their writes.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PushLedger } from "../../src/queue/ledgers/push-ledger.js";
import { makeNamespace, type GroupAddress } from "../../src/queue/namespace.js";
import type { RecordStore } from "../../src/queue/records/record-store.js";

export interface LedgersUnderTest {
  readonly records: () => RecordStore;
}

const namespace = makeNamespace("ledgers-team", "ledgers-project", "production", null);

function group(): GroupAddress {
  return { namespace, topic: `l_${randomBytes(5).toString("hex")}`, group: "g" };
}

export function ledgersContract(name: string, under: LedgersUnderTest): void {
  describe(`ledgers contract: ${name}`, () => {
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

// The per-key decision on a record as read (src/queue/flow-control/key-rules.ts), without a
// store: what a delivery may do and what is written for it, under concurrency, rate and order.
import { describe, expect, it } from "vitest";
import {
  decide,
  MAX_ORDER_LENGTH,
  NO_PACE,
  settle,
  type KeyRules,
  type KeyState,
} from "../../../src/queue/flow-control/key-rules.js";

const NOW = 1_000_000;
const ordered: KeyRules = { concurrency: null, rate: null, ordered: true };
const holder = (streamSeq: number, untilMs = NOW + 30_000) => ({
  streamSeq,
  deliveryCount: 1,
  untilMs,
});
const state = (more: Partial<KeyState> = {}): KeyState => ({ holders: [], ...NO_PACE, ...more });

describe("key rules: ordered", () => {
  it("asks for the log before a head on first sight past the last settled one, then takes it", () => {
    expect(decide(state({ doneSeq: 4 }), holder(9), [], ordered, NOW)).toEqual({
      take: false,
      reason: "gap",
      next: null,
    });
    const v = decide(state({ doneSeq: 4 }), holder(9), [11], ordered, NOW, true);
    expect(v.take).toBe(true);
    expect(v.next).toMatchObject({ holders: [holder(9)], order: [9, 11], doneSeq: 4 });
    // The next sequence after the last settled one needs no look.
    expect(decide(state({ doneSeq: 8 }), holder(9), [], ordered, NOW).take).toBe(true);
  });

  it("makes a later delivery wait behind the head, writing it into the order once", () => {
    const s = state({ order: [3], doneSeq: 2 });
    const v = decide(s, holder(5), [7], ordered, NOW);
    expect(v).toMatchObject({ take: false, reason: "order", next: { order: [3, 5, 7] } });
    const again = decide({ ...s, order: [3, 5, 7] }, holder(5), [], ordered, NOW);
    expect(again).toEqual({ take: false, reason: "order", next: null }); // nothing to write
  });

  it("lets the head go again once its own lease ended, and only one of the key at a time", () => {
    const s = state({ order: [3, 5], holders: [holder(3, NOW - 1)], doneSeq: 2 });
    expect(decide(s, holder(3), [], ordered, NOW).take).toBe(true);
    const busy = state({ order: [3, 5], holders: [holder(4)], doneSeq: 2 });
    expect(decide(busy, holder(3), [], ordered, NOW)).toMatchObject({ reason: "slots" });
  });

  it("moves the head on at a settle, and bounds the order", () => {
    const s = settle(state({ order: [3, 5], holders: [holder(3)] }), 3, ordered, NOW);
    expect(s).toMatchObject({ order: [5], holders: [], doneSeq: 3 });
    const full = state({ order: Array.from({ length: MAX_ORDER_LENGTH }, (_, i) => i + 1) });
    expect(decide(full, holder(1000), [], ordered, NOW)).toMatchObject({ reason: "order" });
  });
});

describe("key rules: rate with concurrency", () => {
  it("takes when both have room and moves the TAT; refuses on either", () => {
    const rules: KeyRules = { concurrency: 2, rate: { intervalMs: 100, burst: 1 }, ordered: false };
    const v = decide(state(), holder(1), [], rules, NOW);
    expect(v).toMatchObject({ take: true, next: { tatMs: NOW + 100, order: [] } });
    expect(decide(state({ tatMs: NOW + 100 }), holder(2), [], rules, NOW)).toEqual({
      take: false,
      reason: "rate",
      next: null,
    });
    const full = state({ holders: [holder(1), holder(2)] });
    expect(decide(full, holder(3), [], rules, NOW)).toMatchObject({ reason: "slots" });
  });
});

// The flow-control checker on hand-made histories: one that holds (a redelivery of the head, a
// lease that ended by expiry), then one per violation.
import { describe, expect, it } from "vitest";
import { checkFlow } from "./flow-checker.js";
import type { HistoryLine } from "./history.js";

const G = "flow";

/** A small history builder: each call writes an invoke at `at` and its complete at `at + took`. */
function history() {
  const lines: HistoryLine[] = [];
  let id = 0;
  const call = (at: number, took: number, op: object, done: object) => {
    const n = ++id;
    lines.push({ type: "invoke", id: n, t: at, proc: "p", gw: 0, ...op } as HistoryLine);
    lines.push({ type: "complete", id: n, t: at + took, ...done } as HistoryLine);
  };
  return {
    lines,
    publish(at: number, body: string) {
      call(at, 5, { f: "publish", key: null, body, delay: 0 }, { status: 201, messageId: body });
    },
    receive(at: number, body: string, handle: string, lease = 5) {
      call(
        at,
        5,
        { f: "receive", group: G, max: 1, lease },
        { status: 200, messages: [{ id: body, handle, count: 1, body }] },
      );
    },
    ack(at: number, body: string, handle: string, status = 204) {
      call(at, 5, { f: "ack", group: G, handle, messageId: body }, { status });
    },
  };
}

describe("the flow-control checker", () => {
  it("holds for a key handed out in order, one at a time, the head redelivered", () => {
    const h = history();
    h.publish(0, "k1:1");
    h.publish(10, "k1:2");
    h.publish(20, "k2:1");
    h.receive(100, "k1:1", "h1");
    h.receive(100, "k2:1", "h2");
    // k1:1's consumer died: its lease ended at 5,100; the head is handed out again.
    h.receive(5200, "k1:1", "h3");
    h.ack(5300, "k1:1", "h3");
    h.ack(200, "k2:1", "h2");
    h.receive(5400, "k1:2", "h4");
    h.ack(5500, "k1:2", "h4");
    const r = checkFlow(h.lines, {
      group: G,
      ordered: true,
      rate: { limit: 2, periodSeconds: 10, burst: 1 },
    });
    expect(r.anomalies).toEqual({ order: [], concurrency: [], rate: [], lost: [] });
    expect(r.published).toBe(3);
    expect(r.deliveries).toBe(4);
  });

  it("finds a later message handed out before the head was acknowledged", () => {
    const h = history();
    h.publish(0, "k1:1");
    h.publish(10, "k1:2");
    h.receive(100, "k1:1", "h1", 1);
    h.receive(1200, "k1:2", "h2");
    h.ack(1300, "k1:2", "h2");
    h.receive(1400, "k1:1", "h3");
    h.ack(1500, "k1:1", "h3");
    const r = checkFlow(h.lines, { group: G, ordered: true });
    expect(r.anomalies.order).toHaveLength(1);
    expect(r.anomalies.order[0]).toContain("k1:2 delivered");
    // The lease of h1 had run out: no two were held at once.
    expect(r.anomalies.concurrency).toEqual([]);
  });

  it("finds more leases of a key held at once than the concurrency", () => {
    const h = history();
    for (const s of [1, 2, 3]) h.publish(s * 10, `k1:${s}`);
    h.receive(100, "k1:1", "h1");
    h.receive(110, "k1:2", "h2");
    h.receive(120, "k1:3", "h3");
    for (const s of [1, 2, 3]) h.ack(500, `k1:${s}`, `h${s}`);
    const r = checkFlow(h.lines, { group: G, concurrency: 2 });
    expect(r.anomalies.concurrency).toEqual(["k1: 3 leases certainly held at 125 ms (limit 2)"]);
    expect(checkFlow(h.lines, { group: G, concurrency: 3 }).anomalies.concurrency).toEqual([]);
  });

  it("finds more hand-outs in a period than limit + burst, redeliveries counted", () => {
    const h = history();
    h.publish(0, "k1:1");
    h.publish(10, "k1:2");
    h.receive(100, "k1:1", "h1", 0);
    h.receive(200, "k1:1", "h2", 0);
    h.receive(300, "k1:2", "h3", 0);
    const rate = { limit: 1, periodSeconds: 1, burst: 1 };
    expect(checkFlow(h.lines, { group: G, rate }).anomalies.rate).toEqual([
      "k1: 3 hand-outs within 1000 ms from 100 ms (at most 2)",
    ]);
    expect(checkFlow(h.lines, { group: G, rate: { ...rate, burst: 2 } }).anomalies.rate).toEqual(
      [],
    );
  });

  it("finds an acknowledged publish never delivered", () => {
    const h = history();
    h.publish(0, "k1:1");
    h.publish(10, "k1:2");
    h.receive(100, "k1:1", "h1");
    h.ack(200, "k1:1", "h1");
    expect(checkFlow(h.lines, { group: G, concurrency: 1 }).anomalies.lost).toEqual(["k1:2"]);
  });
});

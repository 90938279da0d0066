// The history checker on small hand-made histories: a clean run reports nothing, and each anomaly
// kind is found (and only it), with the stream inspection telling late from gone.
import { describe, expect, it } from "vitest";
import { check, DEFAULT_CHECK, idSeq, type CheckReport } from "./checker.js";
import type { Delivered, HistoryLine } from "./history.js";
import type { Inspection, StoredCopy } from "./inspect.js";

/** Builds a history: each call appends an invoke and its completion, 10 ms apart. */
function historyOf() {
  const lines: HistoryLine[] = [];
  let t = 0;
  let id = 0;
  const step = (ms = 10) => (t += ms);
  return {
    lines,
    step,
    publish(
      body: string,
      status: number,
      messageId?: string,
      o: { key?: boolean; delay?: number; ms?: number } = {},
    ) {
      const n = ++id;
      lines.push({
        type: "invoke",
        id: n,
        t: step(),
        proc: "p0",
        gw: 0,
        f: "publish",
        key: o.key === false ? null : body,
        body,
        delay: o.delay ?? 0,
      });
      lines.push({
        type: "complete",
        id: n,
        t: step(o.ms),
        status,
        ...(messageId ? { messageId } : {}),
      });
      return n;
    },
    receive(group: string, messages: Delivered[], gw = 0) {
      const n = ++id;
      lines.push({
        type: "invoke",
        id: n,
        t: step(),
        proc: "c0",
        gw,
        f: "receive",
        group,
        max: 10,
        lease: 5,
      });
      lines.push({
        type: "complete",
        id: n,
        t: step(),
        status: messages.length ? 200 : 204,
        messages,
      });
      return n;
    },
    ack(group: string, m: Delivered, status = 204) {
      const n = ++id;
      lines.push({
        type: "invoke",
        id: n,
        t: step(),
        proc: "c0",
        gw: 0,
        f: "ack",
        group,
        handle: m.handle,
        messageId: m.id,
      });
      lines.push({ type: "complete", id: n, t: step(), status });
      return n;
    },
    invokeOnly(gw: number) {
      const n = ++id;
      lines.push({ type: "invoke", id: n, t: step(), proc: "p1", gw, f: "readyz" });
      return n;
    },
    fault(fault: string, phase: "start" | "end", targets: string[]) {
      lines.push({ type: "nemesis", t: step(), fault, phase, targets });
    },
  };
}

const msg = (seq: number, body: string, count = 1): Delivered => ({
  id: `m${seq.toString(36)}_abcdefghijklmnop`,
  handle: `h-${seq}-${count}`,
  count,
  body,
});

function inspection(stored: StoredCopy[], ackFloor = 0, delivered = 0): Inspection {
  return {
    stream: "S",
    leader: "n0",
    replicas: [],
    firstSeq: 1,
    lastSeq: Math.max(0, ...stored.map((s) => s.seq)),
    stored,
    moved: {},
    groups: { workers: { ackFloor, delivered, pending: 0, ackPending: 0, redelivered: 0 } },
    timers: {},
    scheduler: null,
  };
}

const counts = (r: CheckReport) =>
  Object.fromEntries(Object.entries(r.anomalies).map(([k, v]) => [k, v.length]));
const NONE = { lost: 0, phantom: 0, resurrected: 0, duplicate: 0, hung: 0 };
const ONLY_WORKERS = { ...DEFAULT_CHECK, groups: ["workers"] };

describe("the nemesis history checker", () => {
  it("reads the sequence a stored or duplicate message ID names", () => {
    expect(idSeq("m2s_abcdefghijklmnop")).toBe(100);
    expect(idSeq("x2s_abcdefghijk_abcdefghijklmnop")).toBe(100);
    expect(idSeq("nonsense")).toBeNull();
  });

  it("finds nothing in a clean run with a retry answered as a duplicate", () => {
    const h = historyOf();
    h.publish("k1", 503);
    h.publish("k1", 201, "x1_abcdefghijk_abcdefghijklmnop");
    h.publish("k2", 201, "m2_abcdefghijklmnop");
    const a = msg(1, "k1");
    const b = msg(2, "k2");
    h.receive("workers", [a, b]);
    h.ack("workers", a);
    h.ack("workers", b);
    const r = check(h.lines, inspection([]), ONLY_WORKERS);
    expect(counts(r)).toEqual(NONE);
    expect(r.acknowledgedPublishes).toBe(2);
    expect(r.statuses).toMatchObject({ "publish 201": 2, "publish 503": 1, "ack 204": 2 });
  });

  it("reports a 201 never delivered, and says from the stream whether it is late or gone", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop");
    h.publish("k2", 201, "m2_abcdefghijklmnop");
    h.publish("k3", 201, "m3_abcdefghijklmnop");
    h.receive("workers", []);
    const stored: StoredCopy[] = [
      { seq: 1, idSeq: 1, subject: "ready", body: "k1" },
      { seq: 2, idSeq: 2, subject: "ready", body: "k2" },
    ];
    const r = check(h.lines, inspection(stored, 1, 1), ONLY_WORKERS);
    expect(counts(r)).toEqual({ ...NONE, lost: 3 });
    const why = Object.fromEntries(r.anomalies.lost.map((l) => [l.body, l.diagnosis]));
    expect(why.k1).toMatch(/at or below the group's ack floor/);
    expect(why.k2).toMatch(/not handed out yet.*late/);
    expect(why.k3).toMatch(/not stored.*gone/);
  });

  it("names a delayed message still parked, with or without a pending move timer", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop", { delay: 2 });
    h.publish("k2", 201, "m2_abcdefghijklmnop", { delay: 2 });
    h.receive("workers", []);
    const stored: StoredCopy[] = [
      { seq: 1, idSeq: 1, subject: "parked", body: "k1" },
      { seq: 2, idSeq: 2, subject: "parked", body: "k2" },
    ];
    const r = check(h.lines, { ...inspection(stored), timers: { 1: [], 2: [7] } }, ONLY_WORKERS);
    const why = Object.fromEntries(r.anomalies.lost.map((l) => [l.body, l.diagnosis]));
    expect(why.k1).toMatch(/parked \(seq 1\), never moved, no move timer pending/);
    expect(why.k2).toMatch(/move timer\(s\) pending at schedule seq 7/);
  });

  it("counts messages whose acknowledgements all failed and that never came back", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop");
    const m = msg(1, "k1");
    h.receive("workers", [m]);
    h.ack("workers", m, 503);
    const r = check(h.lines, null, ONLY_WORKERS);
    expect(counts(r)).toEqual(NONE);
    expect(r.ackUnconfirmed).toEqual({ workers: 1 });
  });

  it("does not count a publish answered 503 as lost", () => {
    const h = historyOf();
    h.publish("k1", 503);
    h.publish("u1", 0, undefined, { key: false });
    h.receive("workers", []);
    expect(counts(check(h.lines, null, ONLY_WORKERS))).toEqual(NONE);
  });

  it("reports a delivery of a body never published, or only refused, as phantom", () => {
    const h = historyOf();
    h.publish("k1", 400);
    h.receive("workers", [msg(1, "k1"), msg(2, "never-sent")]);
    const r = check(h.lines, null, ONLY_WORKERS);
    expect(counts(r)).toEqual({ ...NONE, phantom: 2 });
  });

  it("reports a delivery after a 204 for the current handle as resurrected", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop");
    const first = msg(1, "k1");
    h.receive("workers", [first]);
    h.ack("workers", first);
    h.receive("workers", [msg(1, "k1", 2)]);
    const r = check(h.lines, null, ONLY_WORKERS);
    expect(counts(r)).toEqual({ ...NONE, resurrected: 1 });
    expect(r.anomalies.resurrected[0]).toMatchObject({ deliveryCount: 2 });
  });

  it("accepts a redelivery asked for before the acknowledgement completed (the handle was stale)", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop");
    const first = msg(1, "k1");
    h.receive("workers", [first]);
    // The second receive starts while the first handle's lease ran out, before its ack returns.
    const n = 100;
    h.lines.push({
      type: "invoke",
      id: n,
      t: h.step(),
      proc: "c1",
      gw: 1,
      f: "receive",
      group: "workers",
      max: 10,
      lease: 5,
    });
    h.ack("workers", first);
    h.lines.push({
      type: "complete",
      id: n,
      t: h.step(),
      status: 200,
      messages: [msg(1, "k1", 2)],
    });
    expect(counts(check(h.lines, null, ONLY_WORKERS))).toEqual(NONE);
  });

  it("reports a key stored twice, seen in deliveries or in the stream", () => {
    const h = historyOf();
    h.publish("k1", 201, "m1_abcdefghijklmnop");
    h.publish("k1", 201, "m2_abcdefghijklmnop");
    h.publish("k2", 201, "m3_abcdefghijklmnop");
    h.receive("workers", [msg(1, "k1"), msg(2, "k1"), msg(3, "k2")]);
    const stored: StoredCopy[] = [
      { seq: 3, idSeq: 3, subject: "ready", body: "k2" },
      { seq: 4, idSeq: 3, subject: "ready", body: "k2" }, // the same message moved: not twice
    ];
    const r = check(h.lines, inspection(stored), ONLY_WORKERS);
    expect(counts(r)).toEqual({ ...NONE, duplicate: 1 });
    expect(r.anomalies.duplicate[0]).toEqual({ key: "k1", delivered: [1, 2], stored: [] });
  });

  it("reports a slow or unanswered request as hung unless its gateway was paused meanwhile", () => {
    const h = historyOf();
    h.publish("k1", 503, undefined, { ms: 20_000 });
    h.fault("pause-gateway", "start", ["g1"]);
    h.publish("k2", 201, "m1_abcdefghijklmnop", { ms: 20_000 });
    h.fault("pause-gateway", "end", ["g1"]);
    h.invokeOnly(0);
    h.receive("workers", [msg(1, "k2")]);
    const r = check(h.lines, null, ONLY_WORKERS);
    // k1 (before the pause, 20 s) and the readyz that never completed; k2 went to gateway 0 too.
    expect(r.anomalies.hung.map((x) => x.f)).toEqual(["publish", "publish", "readyz"]);
    const excused = historyOf();
    excused.fault("pause-gateway", "start", ["g0"]);
    excused.publish("k1", 201, "m1_abcdefghijklmnop", { ms: 20_000 });
    excused.fault("pause-gateway", "end", ["g0"]);
    excused.receive("workers", [msg(1, "k1")]);
    expect(counts(check(excused.lines, null, ONLY_WORKERS))).toEqual(NONE);
  });

  it("counts statuses per fault, and delayed messages delivered early", () => {
    const h = historyOf();
    h.fault("disk-full", "start", ["n0", "n1", "n2"]);
    h.publish("k1", 503);
    h.fault("disk-full", "end", ["n0", "n1", "n2"]);
    h.publish("k2", 201, "m1_abcdefghijklmnop", { delay: 5 });
    h.receive("workers", [msg(1, "k2")]);
    const r = check(h.lines, null, ONLY_WORKERS);
    expect(r.duringFaults["disk-full"]).toEqual({ "publish 503": 1 });
    expect(r.early).toBe(1);
  });
});

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
      o: { key?: boolean; delay?: number; ms?: number; sha256?: string; size?: number } = {},
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
        ...(o.sha256 !== undefined ? { sha256: o.sha256, size: o.size ?? 0 } : {}),
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
    /** A push the endpoint received (arrived, answered `status` 10 ms later). */
    push(group: string, m: Delivered, status = 200, gw = 0) {
      const n = ++id;
      lines.push({ type: "invoke", id: n, t: step(), proc: "push", gw, f: "push", group });
      lines.push({ type: "complete", id: n, t: step(), status, messages: [m] });
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
const NONE = { lost: 0, phantom: 0, resurrected: 0, duplicate: 0, hung: 0, corrupt: 0 };
const ONLY_WORKERS = { ...DEFAULT_CHECK, groups: ["workers"] };
const WITH_PUSHED = { ...DEFAULT_CHECK, groups: ["workers", "pushed"] };

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

  it("reports a delivered body whose SHA-256 is not the published one's (large bodies)", () => {
    const h = historyOf();
    const good = "a".repeat(64);
    const bad = "b".repeat(64);
    h.publish("Lk1", 503, undefined, { sha256: good, size: 3_000_000 });
    h.publish("Lk1", 201, "m1_abcdefghijklmnop", { sha256: good, size: 3_000_000 });
    h.publish("Lk2", 201, "m2_abcdefghijklmnop", { sha256: good, size: 2_000_000 });
    const right = { ...msg(1, "Lk1"), sha256: good, size: 3_000_000 };
    const wrong = { ...msg(2, "Lk2"), sha256: bad, size: 2_000_000 };
    h.receive("workers", [right, wrong]);
    h.ack("workers", right);
    h.ack("workers", wrong);
    h.push("pushed", { ...msg(1, "Lk1"), sha256: good, size: 3_000_000 });
    h.push("pushed", { ...msg(2, "Lk2"), sha256: bad, size: 1_999_999 });
    const r = check(h.lines, null, WITH_PUSHED);
    expect(counts(r)).toEqual({ ...NONE, corrupt: 2 });
    expect(r.anomalies.corrupt.map((c) => [c.group, c.body, c.delivered.size])).toEqual([
      ["workers", "Lk2", 2_000_000],
      ["pushed", "Lk2", 1_999_999],
    ]);
    expect(r.anomalies.corrupt[0]!.published).toEqual({ sha256: good, size: 2_000_000 });
    expect(r.largeBodies).toEqual({ published: 2, delivered: 4 });
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

  describe("a pushed group", () => {
    it("finds nothing when every publish was pushed, a 500 retried and answered 2xx", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.publish("k2", 201, "m2_abcdefghijklmnop");
      const a = msg(1, "k1");
      h.receive("workers", [a, msg(2, "k2")]);
      h.ack("workers", a);
      h.ack("workers", msg(2, "k2"));
      h.push("pushed", msg(1, "k1"), 500);
      h.push("pushed", msg(2, "k2"));
      h.push("pushed", msg(1, "k1", 2), 200, 1);
      const r = check(h.lines, null, WITH_PUSHED);
      expect(counts(r)).toEqual(NONE);
      expect(r.pushes).toEqual({ pushed: { received: 3, failed: 1 } });
      expect(r.statuses).toMatchObject({ "push 200": 2, "push 500": 1 });
      expect(r.repushedAfter2xx).toEqual([]);
    });

    it("reports a publish never pushed as lost, with the pushed group's consumer", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.publish("k2", 201, "m2_abcdefghijklmnop");
      h.receive("workers", [msg(1, "k1"), msg(2, "k2")]);
      h.push("pushed", msg(1, "k1"));
      // k2 was never pushed: its copy is stored, past what the pushed group's consumer handed out.
      const stored: StoredCopy[] = [{ seq: 2, idSeq: 2, subject: "ready", body: "k2" }];
      const state = { ackFloor: 1, delivered: 1, pending: 1, ackPending: 0, redelivered: 0 };
      const i = { ...inspection(stored), groups: { pushed: state } };
      const r = check(h.lines, i, WITH_PUSHED);
      expect(counts(r)).toEqual({ ...NONE, lost: 1 });
      expect(r.anomalies.lost[0]).toMatchObject({ group: "pushed", body: "k2" });
      expect(r.anomalies.lost[0]!.diagnosis).toMatch(/not handed out yet.*late/);
    });

    it("checks a pushed group that got no push at all", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.receive("workers", [msg(1, "k1")]);
      const pushedOnly = { ...DEFAULT_CHECK, groups: ["pushed"] };
      // No push op at all: the group is not part of this history, nothing to check.
      expect(counts(check(h.lines, null, pushedOnly))).toEqual(NONE);
      h.push("pushed", msg(9, "u-other"), 500);
      const r = check(h.lines, null, pushedOnly);
      expect(r.anomalies.lost.map((l) => [l.group, l.body])).toEqual([["pushed", "k1"]]);
    });

    it("reports a push of a body nobody published as phantom", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.push("pushed", msg(1, "k1"));
      h.push("pushed", msg(2, "never-sent"));
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual({ ...NONE, phantom: 1 });
      expect(r.anomalies.phantom[0]).toMatchObject({ group: "pushed", body: "never-sent" });
    });

    it("reports a push after a 2xx to the current push, with no fault on, as resurrected", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      const ok = h.push("pushed", msg(1, "k1"));
      h.step(20_000);
      const again = h.push("pushed", msg(1, "k1", 2));
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual({ ...NONE, resurrected: 1 });
      expect(r.anomalies.resurrected[0]).toEqual({
        group: "pushed",
        messageId: "m1_abcdefghijklmnop",
        ack: ok,
        receive: again,
        deliveryCount: 2,
      });
      expect(r.repushedAfter2xx).toEqual([]);
    });

    it("counts a push after a 2xx answered during a fault (or just after) as repushed, not resurrected", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.publish("k2", 201, "m2_abcdefghijklmnop");
      h.fault("pause-node", "start", ["n0"]);
      h.push("pushed", msg(1, "k1"));
      h.fault("pause-node", "end", ["n0"]);
      h.step(5000); // within the margin after the fault's end
      h.push("pushed", msg(2, "k2"));
      h.step(20_000);
      h.push("pushed", msg(1, "k1", 2));
      h.push("pushed", msg(2, "k2", 2));
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual(NONE);
      expect(r.repushedAfter2xx.map((x) => [x.messageId, x.fault])).toEqual([
        ["m1_abcdefghijklmnop", "pause-node"],
        ["m2_abcdefghijklmnop", "pause-node"],
      ]);
      // Past the margin, the same repush is resurrected.
      const late = { ...DEFAULT_CHECK, groups: ["pushed"], repushMarginMs: 1000 };
      expect(counts(check(h.lines, null, late))).toEqual({ ...NONE, resurrected: 1 });
    });

    it("counts a push after a 2xx answered just before a fault began as repushed (its autoAck was still on its way)", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      h.push("pushed", msg(1, "k1"));
      h.step(1000);
      h.fault("isolate-node", "start", ["n1"]);
      h.step(7000);
      h.push("pushed", msg(1, "k1", 2));
      h.fault("isolate-node", "end", ["n1"]);
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual(NONE);
      expect(r.repushedAfter2xx.map((x) => x.fault)).toEqual(["isolate-node"]);
      const noLead = { ...DEFAULT_CHECK, groups: ["pushed"], repushLeadMs: 0 };
      expect(counts(check(h.lines, null, noLead))).toEqual({ ...NONE, resurrected: 1 });
    });

    it("counts an older delivery pushed after a newer one was answered 2xx as stale, not resurrected", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      // Gateway 0 took delivery 1 and pushed it late; gateway 1's delivery 2 was answered first.
      const ok = h.push("pushed", msg(1, "k1", 2), 200, 1);
      h.step(20_000);
      const late = h.push("pushed", msg(1, "k1", 1), 200, 0);
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual(NONE);
      expect(r.repushedAfter2xx).toEqual([]);
      expect(r.stalePushesAfter2xx).toEqual([
        {
          group: "pushed",
          messageId: "m1_abcdefghijklmnop",
          ack: ok,
          receive: late,
          deliveryCount: 1,
        },
      ]);
    });

    it("does not excuse a polled redelivery after a 204 by a fault", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      const first = msg(1, "k1");
      h.fault("pause-node", "start", ["n0"]);
      h.receive("workers", [first]);
      h.ack("workers", first);
      h.fault("pause-node", "end", ["n0"]);
      h.receive("workers", [msg(1, "k1", 2)]);
      expect(counts(check(h.lines, null, ONLY_WORKERS))).toEqual({ ...NONE, resurrected: 1 });
    });

    it("accepts a push that overlapped a newer push of the same message (the 2xx was stale)", () => {
      const h = historyOf();
      h.publish("k1", 201, "m1_abcdefghijklmnop");
      // Gateway 0's push arrives, gateway 1 pushes again (count 2) before the first is answered.
      h.lines.push({
        type: "invoke",
        id: 50,
        t: h.step(),
        proc: "push",
        gw: 0,
        f: "push",
        group: "pushed",
      });
      h.push("pushed", msg(1, "k1", 2), 500, 1);
      h.lines.push({
        type: "complete",
        id: 50,
        t: h.step(),
        status: 200,
        messages: [msg(1, "k1")],
      });
      h.step(20_000);
      h.push("pushed", msg(1, "k1", 3), 200, 1);
      const r = check(h.lines, null, { ...DEFAULT_CHECK, groups: ["pushed"] });
      expect(counts(r)).toEqual(NONE);
    });
  });
});

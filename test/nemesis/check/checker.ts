// The history checker: a pure function of a run's history (and, for lost messages, of what the
// stream held afterwards) that reports every anomaly a durable at-least-once queue must not show:
//   lost        a publish answered 201/202 whose message a group never received (polled or
//               pushed);
//   phantom     a delivery (or push) of a body nobody published (or whose every publish was
//               refused);
//   resurrected a delivery to a group after the group acknowledged the message with its current
//               handle (204), or a push after the endpoint answered 2xx to the message's current
//               push (the group has autoAck) while no fault was on;
//   duplicate   more than one stored message for one idempotency key;
//   hung        a request slower than its bound that no fault excuses (its gateway was paused);
//   corrupt     a delivery (or push) whose bytes' SHA-256 is not the SHA-256 of what was
//               published under its body label (large bodies go through the large-body store).
// It also counts what clients saw during each fault, how late deliveries came, delayed messages
// delivered before they were due, and pushes repeated after a 2xx answered during a fault (the
// gateway's autoAck may have failed then: the message legitimately comes back).
import type { Complete, Delivered, HistoryLine, Invoke, NemesisEvent } from "./history.js";
import type { Inspection } from "./inspect.js";

export const ANOMALIES = [
  "lost",
  "phantom",
  "resurrected",
  "duplicate",
  "hung",
  "corrupt",
] as const;
export type AnomalyKind = (typeof ANOMALIES)[number];

export interface CheckOptions {
  /** Groups whose deliveries are checked for loss (each must receive every stored message). */
  readonly groups: readonly string[];
  /** A request slower than this is hung unless its gateway was paused meanwhile. */
  readonly boundMs: number;
  /** A delayed message received more than this before its due time counts as early. */
  readonly earlyToleranceMs: number;
  /**
   * A push answered 2xx while a fault was on, up to `repushMarginMs` after it ended or up to
   * `repushLeadMs` before it began may come back (its autoAck, sent after the answer arrived and
   * bounded by the gateway's 2 s NATS request timeout, may have failed): counted as repushed
   * after 2xx, not resurrected.
   */
  readonly repushMarginMs: number;
  readonly repushLeadMs: number;
}

export const DEFAULT_CHECK: CheckOptions = {
  groups: ["workers", "pushed", "audit"],
  boundMs: 15_000,
  earlyToleranceMs: 1000,
  repushMarginMs: 10_000,
  repushLeadMs: 5000,
};

export interface Lost {
  readonly group: string;
  readonly body: string;
  /** The message ID the publish was answered with (none for 202). */
  readonly messageId: string | null;
  readonly publishes: readonly number[];
  /** What the stream says about it (with an inspection), else "not inspected". */
  readonly diagnosis: string;
}

export interface Phantom {
  readonly group: string;
  readonly body: string;
  readonly messageId: string;
  readonly receive: number;
}

export interface Resurrected {
  readonly group: string;
  readonly messageId: string;
  /** The acknowledgement (204) of the then-current handle, or the push answered 2xx... */
  readonly ack: number;
  /** ...and the receive or push, invoked after it completed, that delivered the message again. */
  readonly receive: number;
  readonly deliveryCount: number;
}

export interface Duplicate {
  readonly key: string;
  /** Distinct message sequences delivered for the key (any group). */
  readonly delivered: readonly number[];
  /** Distinct message sequences the stream holds for the key. */
  readonly stored: readonly number[];
}

export interface Hung {
  readonly op: number;
  readonly f: string;
  readonly gateway: number;
  readonly ms: number | null;
  readonly status: number | null;
}

export interface Corrupt {
  readonly group: string;
  readonly body: string;
  readonly messageId: string;
  readonly receive: number;
  /** SHA-256 and size published, and delivered. */
  readonly published: { readonly sha256: string; readonly size: number | null };
  readonly delivered: { readonly sha256: string; readonly size: number | null };
}

export interface CheckReport {
  readonly anomalies: {
    readonly lost: readonly Lost[];
    readonly phantom: readonly Phantom[];
    readonly resurrected: readonly Resurrected[];
    readonly duplicate: readonly Duplicate[];
    readonly hung: readonly Hung[];
    readonly corrupt: readonly Corrupt[];
  };
  /** "publish 201" -> count, over the whole run. */
  readonly statuses: Readonly<Record<string, number>>;
  /** fault -> "publish 503" -> count, for operations completed while the fault was on. */
  readonly duringFaults: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly faults: readonly string[];
  readonly acknowledgedPublishes: number;
  /**
   * Bodies above 1 MiB (the gateway's inline limit by default: through its large-body store):
   * publishes answered 201/202, and deliveries (receives and pushes) checked by SHA-256.
   */
  readonly largeBodies: { readonly published: number; readonly delivered: number };
  readonly keys: number;
  readonly deliveries: number;
  /** Delayed messages received before they were due (beyond the tolerance). */
  readonly early: number;
  /** Per group: the longest wait from a publish's answer (or due time) to its first delivery. */
  readonly slowestFirstDeliveryMs: Readonly<Record<string, number>>;
  /** Per group: messages first delivered more than 30 s after they could have been. */
  readonly deliveredAfter30s: Readonly<Record<string, number>>;
  /**
   * Per group: messages whose acknowledgements all failed (503, timeout) and that never came
   * back: the failed acknowledgement took effect (the group's state at the end tells).
   */
  readonly ackUnconfirmed: Readonly<Record<string, number>>;
  /**
   * Pushes that came again after a 2xx to the current push answered during a fault (or within
   * the margin after it): the autoAck may have failed, so not an anomaly, but counted.
   */
  readonly repushedAfter2xx: readonly (Resurrected & { readonly fault: string })[];
  /**
   * Pushes of an older delivery (a delivery count not above the one already answered 2xx) that
   * arrived after that 2xx: the gateway had taken the message before the newer delivery existed
   * and pushed it late (past its push lease). Like a receive invoked before the acknowledgement
   * completed, not an anomaly, but counted.
   */
  readonly stalePushesAfter2xx: readonly Resurrected[];
  /** Per pushed group: pushes received, and how many the endpoint answered other than 2xx. */
  readonly pushes: Readonly<Record<string, { readonly received: number; readonly failed: number }>>;
  /** Each group's consumer at the end (ack floor, still pending), from the inspection. */
  readonly groupsAtEnd: Inspection["groups"] | null;
}

/** Windows the history marks that are phases of a run rather than faults. */
const PHASES = ["drain", "disk-recovery"];

/** Bodies above this go through the gateway's large-body store (its default inline limit). */
const LARGE_BYTES = 1024 * 1024;

/** Statuses that say for sure the message was not stored. */
const REFUSED = new Set([400, 401, 403, 404, 413, 429]);

interface Op {
  readonly invoke: Invoke;
  readonly complete: Complete | null;
}

interface Delivery extends Delivered {
  readonly group: string;
  readonly seq: number;
  readonly receive: number;
  readonly invokedAt: number;
  readonly completedAt: number;
}

/** The sequence a message ID names: stored "m<seq36>_..." or duplicate "x<seq36>_...". */
export function idSeq(messageId: string): number | null {
  const m = /^[mx]([0-9a-z]{1,11})_/.exec(messageId);
  return m ? parseInt(m[1]!, 36) : null;
}

export function check(
  history: readonly HistoryLine[],
  inspection: Inspection | null,
  options: CheckOptions = DEFAULT_CHECK,
): CheckReport {
  const ops = new Map<number, Op>();
  const events: NemesisEvent[] = [];
  for (const line of history) {
    if (line.type === "invoke") ops.set(line.id, { invoke: line, complete: null });
    else if (line.type === "complete") {
      const op = ops.get(line.id);
      if (op) ops.set(line.id, { ...op, complete: line });
    } else if (line.type === "nemesis") events.push(line);
  }
  const all = [...ops.values()];
  const windows = faultWindows(events, history.at(-1)?.t ?? 0);

  const statuses: Record<string, number> = {};
  const duringFaults: Record<string, Record<string, number>> = {};
  for (const { invoke, complete } of all) {
    const label = `${invoke.f} ${complete ? complete.status : "none"}`;
    statuses[label] = (statuses[label] ?? 0) + 1;
    const at = complete?.t ?? invoke.t;
    for (const w of windows) {
      if (at < w.start || at > w.end) continue;
      const per = (duringFaults[w.fault] ??= {});
      per[label] = (per[label] ?? 0) + 1;
    }
  }

  // Publishes, by body: every body is one message (a key, or one plain publish).
  const publishes = all.filter((o) => o.invoke.f === "publish");
  const bodies = new Map<string, { key: string | null; delay: number; ops: Op[] }>();
  for (const o of publishes) {
    const inv = o.invoke as Invoke & { f: "publish" };
    const b = bodies.get(inv.body) ?? { key: inv.key, delay: inv.delay, ops: [] };
    b.ops.push(o);
    bodies.set(inv.body, b);
  }
  const acknowledged = publishes.filter(
    (o) => o.complete?.status === 201 || o.complete?.status === 202,
  );

  const deliveries: Delivery[] = [];
  for (const { invoke, complete } of all) {
    if ((invoke.f !== "receive" && invoke.f !== "push") || !complete?.messages) continue;
    for (const m of complete.messages) {
      deliveries.push({
        ...m,
        group: invoke.group,
        seq: idSeq(m.id) ?? -1,
        receive: invoke.id,
        invokedAt: invoke.t,
        completedAt: complete.t,
      });
    }
  }

  const lost: Lost[] = [];
  const slowest: Record<string, number> = {};
  const after30: Record<string, number> = {};
  for (const group of options.groups) {
    const mine = deliveries.filter((d) => d.group === group);
    const used = all.some(
      (o) => (o.invoke.f === "receive" || o.invoke.f === "push") && o.invoke.group === group,
    );
    if (mine.length === 0 && !used) continue;
    const firstBySeq = new Map<number, number>();
    const bodiesSeen = new Map<string, Set<string>>();
    for (const d of mine) {
      if (!firstBySeq.has(d.seq)) firstBySeq.set(d.seq, d.completedAt);
      const ids = bodiesSeen.get(d.body) ?? new Set<string>();
      ids.add(d.id);
      bodiesSeen.set(d.body, ids);
    }
    const reported = new Map<string, Lost & { publishes: number[] }>();
    for (const o of acknowledged) {
      const inv = o.invoke as Invoke & { f: "publish" };
      const messageId = o.complete!.status === 201 ? (o.complete!.messageId ?? null) : null;
      const seq = messageId ? idSeq(messageId) : null;
      const seen = seq !== null ? firstBySeq.get(seq) : firstTime(mine, inv.body);
      if (seen !== undefined) {
        const due = Math.max(o.complete!.t, inv.t + inv.delay * 1000);
        const wait = seen - due;
        slowest[group] = Math.max(slowest[group] ?? 0, wait);
        if (wait > 30_000) after30[group] = (after30[group] ?? 0) + 1;
        continue;
      }
      const id = `${seq ?? inv.body}`;
      const prior = reported.get(id);
      if (prior) {
        prior.publishes.push(inv.id);
        continue;
      }
      reported.set(id, {
        group,
        body: inv.body,
        messageId,
        publishes: [inv.id],
        diagnosis: diagnose(inspection, group, seq, inv.body, bodiesSeen.get(inv.body)),
      });
    }
    lost.push(...reported.values());
  }

  // A body is "published" if some attempt may have stored it (not refused outright).
  const phantom: Phantom[] = [];
  for (const d of deliveries) {
    const b = bodies.get(d.body);
    const mayBeStored = b?.ops.some((o) => !o.complete || !REFUSED.has(o.complete.status));
    if (!mayBeStored)
      phantom.push({ group: d.group, body: d.body, messageId: d.id, receive: d.receive });
  }

  // Every delivered body against what was published under its label (every attempt of a keyed
  // publish sends the same bytes; histories without SHA-256s are not checked).
  const corrupt: Corrupt[] = [];
  for (const d of deliveries) {
    if (d.sha256 === undefined) continue;
    const sent = bodies
      .get(d.body)
      ?.ops.map((o) => o.invoke as Invoke & { f: "publish" })
      .find((inv) => inv.sha256 !== undefined);
    if (!sent?.sha256 || sent.sha256 === d.sha256) continue;
    corrupt.push({
      group: d.group,
      body: d.body,
      messageId: d.id,
      receive: d.receive,
      published: { sha256: sent.sha256, size: sent.size ?? null },
      delivered: { sha256: d.sha256, size: d.size ?? null },
    });
  }

  const excuses = windows.filter((w) => w.fault !== "drain");
  const { resurrected, repushed, stale } = findResurrections(
    all,
    deliveries,
    excuses,
    options.repushLeadMs,
    options.repushMarginMs,
  );

  const pushes: Record<string, { received: number; failed: number }> = {};
  for (const { invoke, complete } of all) {
    if (invoke.f !== "push") continue;
    const p = (pushes[invoke.group] ??= { received: 0, failed: 0 });
    p.received++;
    if (!complete || complete.status < 200 || complete.status > 299) p.failed++;
  }

  const duplicate: Duplicate[] = [];
  for (const [body, b] of bodies) {
    if (b.key === null) continue;
    const delivered = new Set(deliveries.filter((d) => d.body === body).map((d) => d.seq));
    const stored = new Set(
      (inspection?.stored ?? []).filter((s) => s.body === body).map((s) => s.idSeq),
    );
    if (delivered.size > 1 || stored.size > 1) {
      duplicate.push({ key: b.key, delivered: [...delivered].sort(), stored: [...stored].sort() });
    }
  }

  const hung: Hung[] = [];
  const pauses = windows.filter((w) => w.fault === "pause-gateway");
  for (const { invoke, complete } of all) {
    const ms = complete ? complete.t - invoke.t : null;
    const slow = ms === null || ms > options.boundMs || complete?.status === -1;
    if (!slow) continue;
    const end = complete?.t ?? Infinity;
    const excused = pauses.some(
      (w) => w.targets.includes(`g${invoke.gw}`) && w.start <= end && w.end >= invoke.t,
    );
    if (!excused) {
      hung.push({
        op: invoke.id,
        f: invoke.f,
        gateway: invoke.gw,
        ms,
        status: complete?.status ?? null,
      });
    }
  }

  const ackUnconfirmed: Record<string, number> = {};
  const ackedHandles = new Set(
    all
      .filter((o) => o.invoke.f === "ack" && o.complete?.status === 204)
      .map((o) => (o.invoke as Invoke & { f: "ack" }).handle),
  );
  const triedHandles = new Set(
    all.filter((o) => o.invoke.f === "ack").map((o) => (o.invoke as Invoke & { f: "ack" }).handle),
  );
  const lastDelivery = new Map<string, Delivery>();
  for (const d of deliveries) lastDelivery.set(`${d.group}|${d.seq}`, d);
  for (const d of lastDelivery.values()) {
    if (triedHandles.has(d.handle) && !ackedHandles.has(d.handle)) {
      ackUnconfirmed[d.group] = (ackUnconfirmed[d.group] ?? 0) + 1;
    }
  }

  let early = 0;
  for (const d of deliveries) {
    const b = bodies.get(d.body);
    if (!b || b.delay === 0) continue;
    const firstInvoke = Math.min(...b.ops.map((o) => o.invoke.t));
    if (d.completedAt < firstInvoke + b.delay * 1000 - options.earlyToleranceMs) early++;
  }

  return {
    anomalies: { lost, phantom, resurrected, duplicate, hung, corrupt },
    statuses,
    duringFaults,
    faults: events
      .filter((e) => e.phase === "start" && !PHASES.includes(e.fault))
      .map((e) => e.fault),
    acknowledgedPublishes: acknowledged.length,
    largeBodies: {
      published: acknowledged.filter(
        (o) => ((o.invoke as Invoke & { f: "publish" }).size ?? 0) > LARGE_BYTES,
      ).length,
      delivered: deliveries.filter((d) => (d.size ?? 0) > LARGE_BYTES && d.sha256 !== undefined)
        .length,
    },
    keys: [...bodies.values()].filter((b) => b.key !== null).length,
    deliveries: deliveries.length,
    early,
    slowestFirstDeliveryMs: slowest,
    deliveredAfter30s: after30,
    ackUnconfirmed,
    repushedAfter2xx: repushed,
    stalePushesAfter2xx: stale,
    pushes,
    groupsAtEnd: inspection?.groups ?? null,
  };
}

function firstTime(deliveries: readonly Delivery[], body: string): number | undefined {
  return deliveries.find((d) => d.body === body)?.completedAt;
}

interface Window {
  readonly fault: string;
  readonly targets: readonly string[];
  readonly start: number;
  readonly end: number;
}

/** Each fault's start..end (a fault never ended lasts to the end of the history). */
function faultWindows(events: readonly NemesisEvent[], lastT: number): Window[] {
  const open: NemesisEvent[] = [];
  const out: Window[] = [];
  for (const e of events) {
    if (e.phase === "start") open.push(e);
    else if (e.phase === "end") {
      const i = open.findIndex(
        (s) => s.fault === e.fault && (s.targets ?? []).join() === (e.targets ?? []).join(),
      );
      if (i < 0) continue;
      const [s] = open.splice(i, 1);
      out.push({ fault: s!.fault, targets: s!.targets ?? [], start: s!.t, end: e.t });
    }
  }
  for (const s of open)
    out.push({ fault: s.fault, targets: s.targets ?? [], start: s.t, end: lastT });
  return out;
}

/**
 * An acknowledgement answered 204 for a handle that was current (no later delivery of the
 * message to the group had been asked for before the acknowledgement completed) closes the
 * message for that group: a receive invoked after it must not bring the message back. A push
 * answered 2xx does the same for a pushed group (autoAck), except that the gateway acknowledges
 * after the answer, and that acknowledgement may fail during a fault: a push that comes back
 * after a 2xx answered during one (or `leadMs` before it, `marginMs` after it) is counted as
 * repushed, not resurrected. A push whose delivery count is not above the answered one's is an
 * older delivery pushed late (stale), whichever the time.
 */
function findResurrections(
  all: readonly Op[],
  deliveries: readonly Delivery[],
  faults: readonly Window[],
  leadMs: number,
  marginMs: number,
): {
  resurrected: Resurrected[];
  repushed: (Resurrected & { fault: string })[];
  stale: Resurrected[];
} {
  const byHandle = new Map<string, Delivery>();
  const byOp = new Map<number, Delivery>();
  const byMessage = new Map<string, Delivery[]>();
  for (const d of deliveries) {
    byHandle.set(`${d.group}|${d.handle}`, d);
    byOp.set(d.receive, d);
    const k = `${d.group}|${d.seq}`;
    const list = byMessage.get(k) ?? [];
    list.push(d);
    byMessage.set(k, list);
  }
  const resurrected: Resurrected[] = [];
  const repushed: (Resurrected & { fault: string })[] = [];
  const stale: Resurrected[] = [];
  for (const { invoke, complete } of all) {
    if (!complete) continue;
    let d: Delivery | undefined;
    if (invoke.f === "ack" && complete.status === 204) {
      d = byHandle.get(`${invoke.group}|${invoke.handle}`);
    } else if (invoke.f === "push" && complete.status >= 200 && complete.status <= 299) {
      d = byOp.get(invoke.id);
    }
    if (!d) continue;
    const others = byMessage.get(`${d.group}|${d.seq}`) ?? [];
    const current = !others.some(
      (o) => o !== d && o.invokedAt < complete.t && o.count > d.count && o.receive !== d.receive,
    );
    if (!current) continue;
    const again = others.find((o) => o.invokedAt > complete.t);
    if (!again) continue;
    const found = {
      group: d.group,
      messageId: again.id,
      ack: invoke.id,
      receive: again.receive,
      deliveryCount: again.count,
    };
    if (invoke.f === "push" && again.count <= d.count) {
      stale.push(found);
      continue;
    }
    const during =
      invoke.f === "push"
        ? faults.find((w) => w.start - leadMs <= complete.t && complete.t <= w.end + marginMs)
        : undefined;
    if (during) repushed.push({ ...found, fault: during.fault });
    else resurrected.push(found);
  }
  return { resurrected, repushed, stale };
}

/** What the stream says about a message a group never received. */
function diagnose(
  inspection: Inspection | null,
  group: string,
  seq: number | null,
  body: string,
  seenAs: Set<string> | undefined,
): string {
  if (seenAs && seenAs.size > 0) return `its body was delivered as ${[...seenAs].join(", ")}`;
  if (!inspection) return "not inspected";
  const copies = inspection.stored.filter((s) =>
    seq !== null ? s.idSeq === seq : s.body === body,
  );
  const ready = copies.find((c) => c.subject === "ready");
  const state = inspection.groups[group];
  if (ready) {
    if (!state) return `stored (seq ${ready.seq}); the group's consumer is gone`;
    if (ready.seq <= state.ackFloor)
      return `stored (seq ${ready.seq}) at or below the group's ack floor ${state.ackFloor}: acknowledged without a recorded delivery`;
    if (ready.seq <= state.delivered)
      return `stored (seq ${ready.seq}), handed out and not acknowledged (ack floor ${state.ackFloor}, delivered ${state.delivered}): late`;
    return `stored (seq ${ready.seq}), not handed out yet (delivered up to ${state.delivered}): late`;
  }
  const parked = copies.find((c) => c.subject === "parked");
  if (parked) {
    const to = inspection.moved[parked.seq];
    if (to)
      return `parked (seq ${parked.seq}), moved to seq ${to}, which is no longer stored: gone`;
    const timers = inspection.timers[parked.seq] ?? [];
    const t =
      timers.length === 0
        ? "no move timer pending (never stored, or acknowledged without a move)"
        : `move timer(s) pending at schedule seq ${timers.join(", ")}`;
    return `parked (seq ${parked.seq}), never moved, ${t}: late (stuck)`;
  }
  if (seq !== null && (seq < inspection.firstSeq || seq > inspection.lastSeq))
    return `not stored: seq ${seq} outside the stream's ${inspection.firstSeq}..${inspection.lastSeq}: gone`;
  return `not stored (no message with seq ${seq ?? "?"} or its body): gone`;
}

// The flow-control checker: reads a nemesis history whose publishes carry a key and a per-key
// sequence number in their body (`<key>:<seq>`, test/nemesis/flow-workload.ts) and judges one
// polled group with `flowControl` against docs/api.md "Flow control". Every bound is judged on
// what certainly happened, from the test process's clock: a hand-out happened somewhere between
// a receive's invocation and its completion, a settlement between an ack's invocation and its
// completion, so the checker reports only what no timing could explain.
//  - order (`ordered`): among the messages the group acknowledged, for a key's a published before
//    b (a's 201 came before b's publish was sent), no delivery of b completed before a's first
//    acknowledgement was sent: b goes only once a is settled. Redeliveries of a are allowed.
//  - concurrency: a lease was certainly held from its receive's completion until the earlier of
//    its first acknowledgement's invocation and its receive's invocation plus the lease (a lease
//    that ended by expiry, its consumer killed or its ack lost, counts only until then). More of
//    one key's leases certainly held at one instant than the limit is a violation.
//  - rate: hand-outs of one key certainly inside one `periodSeconds` window (their receives
//    invoked and completed within it) are at most `limit + burst`.
//  - lost: every publish answered 201/202 was delivered to the group at least once.
import type { Complete, Delivered, HistoryLine, Invoke } from "./history.js";

export interface FlowCheckOptions {
  readonly group: string;
  readonly concurrency?: number;
  readonly ordered?: boolean;
  readonly rate?: {
    readonly limit: number;
    readonly periodSeconds: number;
    readonly burst?: number;
  };
}

export interface FlowReport {
  readonly published: number;
  readonly deliveries: number;
  readonly keys: number;
  readonly anomalies: {
    readonly order: string[];
    readonly concurrency: string[];
    readonly rate: string[];
    readonly lost: string[];
  };
}

interface Delivery {
  readonly key: string;
  readonly body: string;
  readonly handle: string;
  readonly invokedAt: number;
  readonly completedAt: number;
  readonly leaseMs: number;
}

/** `<key>:<seq>` bodies only; anything else is not this scenario's. */
export function keyOf(body: string): { key: string; seq: number } | null {
  const m = /^([a-z0-9-]+):(\d+)$/.exec(body);
  return m ? { key: m[1]!, seq: Number(m[2]) } : null;
}

export function checkFlow(lines: readonly HistoryLine[], o: FlowCheckOptions): FlowReport {
  const invokes = new Map<number, Invoke>();
  const published = new Map<string, { invokedAt: number; storedAt: number }>();
  const deliveries: Delivery[] = [];
  /** Body → the earliest invocation of an acknowledgement, and whether one answered 204. */
  const acks = new Map<string, { firstAt: number; acked: boolean }>();
  /** Handle → the earliest invocation of its acknowledgement. */
  const handleAckAt = new Map<string, number>();
  const bodyOfId = new Map<string, string>();
  for (const l of lines) {
    if (l.type === "invoke") {
      invokes.set(l.id, l);
      if (l.f === "ack" && l.group === o.group) {
        const body = bodyOfId.get(l.messageId);
        if (body !== undefined) {
          const a = acks.get(body);
          if (!a) acks.set(body, { firstAt: l.t, acked: false });
        }
        if (!handleAckAt.has(l.handle)) handleAckAt.set(l.handle, l.t);
      }
      continue;
    }
    if (l.type !== "complete") continue;
    const inv = invokes.get(l.id);
    if (!inv) continue;
    if (inv.f === "publish" && (l.status === 201 || l.status === 202) && keyOf(inv.body)) {
      if (!published.has(inv.body)) published.set(inv.body, { invokedAt: inv.t, storedAt: l.t });
    } else if (inv.f === "receive" && inv.group === o.group) {
      for (const m of l.messages ?? []) addDelivery(deliveries, bodyOfId, inv, l, m);
    } else if (inv.f === "ack" && inv.group === o.group && l.status === 204) {
      const body = bodyOfId.get(inv.messageId);
      const a = body === undefined ? undefined : acks.get(body);
      if (a) a.acked = true;
    }
  }
  const byKey = new Map<string, Delivery[]>();
  for (const d of deliveries) byKey.set(d.key, [...(byKey.get(d.key) ?? []), d]);
  const anomalies = {
    order: o.ordered ? orderViolations(published, byKey, acks) : [],
    concurrency: concurrencyViolations(byKey, handleAckAt, o.ordered ? 1 : o.concurrency),
    rate: o.rate ? rateViolations(byKey, o.rate) : [],
    lost: [...published.keys()].filter((b) => !deliveries.some((d) => d.body === b)),
  };
  return { published: published.size, deliveries: deliveries.length, keys: byKey.size, anomalies };
}

function addDelivery(
  out: Delivery[],
  bodyOfId: Map<string, string>,
  inv: Invoke & { f: "receive" },
  l: Complete,
  m: Delivered,
): void {
  const k = keyOf(m.body);
  if (!k) return;
  bodyOfId.set(m.id, m.body);
  out.push({
    key: k.key,
    body: m.body,
    handle: m.handle,
    invokedAt: inv.t,
    completedAt: l.t,
    leaseMs: inv.lease * 1000,
  });
}

function orderViolations(
  published: Map<string, { invokedAt: number; storedAt: number }>,
  byKey: Map<string, Delivery[]>,
  acks: Map<string, { firstAt: number; acked: boolean }>,
): string[] {
  const out: string[] = [];
  for (const [key, ds] of byKey) {
    const acked = [...new Set(ds.map((d) => d.body))].filter((b) => acks.get(b)?.acked);
    for (const a of acked) {
      const pa = published.get(a);
      const ackAt = acks.get(a)!.firstAt;
      if (!pa) continue;
      for (const b of acked) {
        const pb = published.get(b);
        if (!pb || pa.storedAt >= pb.invokedAt) continue;
        const early = ds.find((d) => d.body === b && d.completedAt < ackAt);
        if (early) {
          out.push(
            `${key}: ${b} delivered at ${early.completedAt} ms, before ${a} (published first) was acknowledged at ${ackAt} ms`,
          );
        }
      }
    }
  }
  return out;
}

function concurrencyViolations(
  byKey: Map<string, Delivery[]>,
  handleAckAt: Map<string, number>,
  limit: number | undefined,
): string[] {
  if (limit === undefined) return [];
  const out: string[] = [];
  for (const [key, ds] of byKey) {
    const edges: { t: number; d: number; body: string }[] = [];
    for (const d of ds) {
      const end = Math.min(handleAckAt.get(d.handle) ?? Infinity, d.invokedAt + d.leaseMs);
      if (end <= d.completedAt) continue;
      edges.push({ t: d.completedAt, d: 1, body: d.body }, { t: end, d: -1, body: d.body });
    }
    // An end before a start at the same instant: touching leases do not overlap.
    edges.sort((x, y) => x.t - y.t || x.d - y.d);
    let held = 0;
    for (const e of edges) {
      held += e.d;
      if (held > limit) {
        out.push(`${key}: ${held} leases certainly held at ${e.t} ms (limit ${limit})`);
        break;
      }
    }
  }
  return out;
}

function rateViolations(
  byKey: Map<string, Delivery[]>,
  rate: { limit: number; periodSeconds: number; burst?: number },
): string[] {
  const most = rate.limit + (rate.burst ?? rate.limit);
  const periodMs = rate.periodSeconds * 1000;
  const out: string[] = [];
  for (const [key, ds] of byKey) {
    for (const first of ds) {
      const from = first.invokedAt;
      const inside = ds.filter((d) => d.invokedAt >= from && d.completedAt <= from + periodMs);
      if (inside.length > most) {
        out.push(
          `${key}: ${inside.length} hand-outs within ${periodMs} ms from ${from} ms (at most ${most})`,
        );
        break;
      }
    }
  }
  return out;
}

// The checker's report as text: the anomaly table (what the soak prints and docs/reliability.md
// quotes), the pushed group's own table, the first few findings of each kind, and what clients
// saw during each fault.
import { ANOMALIES, type CheckReport } from "./checker.js";

export interface RoundSummary {
  readonly label: string;
  readonly report: CheckReport;
}

/** One Markdown table row per round, plus a total row when there are several. */
export function anomalyTable(rounds: readonly RoundSummary[]): string {
  const head = [
    "round",
    "faults",
    "publishes 201/202",
    "keys",
    "deliveries",
    ...ANOMALIES,
    "early",
    "slowest 1st delivery",
  ];
  const rows = rounds.map(({ label, report: r }) => [
    label,
    String(r.faults.length),
    String(r.acknowledgedPublishes),
    String(r.keys),
    String(r.deliveries),
    ...ANOMALIES.map((k) => String(r.anomalies[k].length)),
    String(r.early),
    `${Math.round((r.slowestFirstDeliveryMs.workers ?? 0) / 100) / 10} s`,
  ]);
  if (rounds.length > 1) {
    const sum = (f: (r: CheckReport) => number) =>
      String(rounds.reduce((n, x) => n + f(x.report), 0));
    rows.push([
      "**total**",
      sum((r) => r.faults.length),
      sum((r) => r.acknowledgedPublishes),
      sum((r) => r.keys),
      sum((r) => r.deliveries),
      ...ANOMALIES.map((k) => sum((r) => r.anomalies[k].length)),
      sum((r) => r.early),
      `${Math.round(Math.max(...rounds.map((x) => x.report.slowestFirstDeliveryMs.workers ?? 0)) / 100) / 10} s`,
    ]);
  }
  return [head, head.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`).join("\n");
}

/** One Markdown row per round for one pushed group: its pushes and its anomalies. */
export function pushedTable(rounds: readonly RoundSummary[], group: string): string {
  const head = [
    "round",
    "faults",
    "publishes 201/202",
    "pushes",
    "answered 500",
    "lost",
    "phantom",
    "resurrected",
    "repushed after 2xx",
    "stale push after 2xx",
    "slowest 1st push",
  ];
  const row = (label: string, rs: readonly CheckReport[]) => {
    const n = (f: (r: CheckReport) => number) => String(rs.reduce((a, r) => a + f(r), 0));
    const mine = (k: "lost" | "phantom" | "resurrected") => (r: CheckReport) =>
      r.anomalies[k].filter((x) => x.group === group).length;
    const slowest = Math.max(0, ...rs.map((r) => r.slowestFirstDeliveryMs[group] ?? 0));
    return [
      label,
      n((r) => r.faults.length),
      n((r) => r.acknowledgedPublishes),
      n((r) => r.pushes[group]?.received ?? 0),
      n((r) => r.pushes[group]?.failed ?? 0),
      n(mine("lost")),
      n(mine("phantom")),
      n(mine("resurrected")),
      n((r) => r.repushedAfter2xx.filter((x) => x.group === group).length),
      n((r) => r.stalePushesAfter2xx.filter((x) => x.group === group).length),
      `${Math.round(slowest / 100) / 10} s`,
    ];
  };
  const rows = rounds.map(({ label, report }) => row(label, [report]));
  if (rounds.length > 1)
    rows.push(
      row(
        "**total**",
        rounds.map((r) => r.report),
      ),
    );
  return [head, head.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`).join("\n");
}

/** The findings themselves (at most `max` of each kind) and the statuses seen during faults. */
export function details(report: CheckReport, max = 5): string {
  const out: string[] = [
    `large bodies (over 1 MiB): ${report.largeBodies.published} published, ` +
      `${report.largeBodies.delivered} deliveries checked by SHA-256`,
  ];
  for (const kind of ANOMALIES) {
    const list = report.anomalies[kind] as readonly unknown[];
    if (list.length === 0) continue;
    out.push(`${kind} (${list.length}):`);
    for (const f of list.slice(0, max)) out.push(`  ${JSON.stringify(f)}`);
  }
  for (const [group, n] of Object.entries(report.ackUnconfirmed)) {
    const end = report.groupsAtEnd?.[group];
    out.push(
      `${group}: ${n} messages whose acknowledgements all failed never came back` +
        (end ? ` (consumer at the end: ${JSON.stringify(end)})` : ""),
    );
  }
  for (const [group, p] of Object.entries(report.pushes)) {
    const again = report.repushedAfter2xx.filter((x) => x.group === group);
    const stale = report.stalePushesAfter2xx.filter((x) => x.group === group);
    out.push(
      `${group}: ${p.received} pushes, ${p.failed} answered other than 2xx; ` +
        `${again.length} came again after a 2xx answered during a fault` +
        (again.length ? ` (${[...new Set(again.map((x) => x.fault))].join(", ")})` : "") +
        `; ${stale.length} older deliveries pushed after a newer one was answered 2xx`,
    );
    for (const x of stale.slice(0, 3)) out.push(`  stale: ${JSON.stringify(x)}`);
  }
  for (const [fault, statuses] of Object.entries(report.duringFaults)) {
    const s = Object.entries(statuses)
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join(", ");
    out.push(`during ${fault}: ${s}`);
  }
  return out.join("\n");
}

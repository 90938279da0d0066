// Turns recorded runs into the results file's shape and into the printed (Markdown) table.
import { availableParallelism } from "node:os";
import type { ResourceUse, Window } from "./runner.js";
import { percentiles, round, type Recorder } from "./stats.js";

export interface RunResult {
  /** Messages per second: published (publish), acknowledged (receive). */
  readonly msgsPerSec: number;
  /** Latency of the scenario's measured call (publish or receive), ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Acknowledgement latency (receive scenarios), ms. */
  readonly ackP50Ms?: number;
  readonly ackP99Ms?: number;
  readonly messages: number;
  readonly operations: number;
  readonly errors: number;
  readonly errorKinds?: Record<string, number>;
  readonly seconds: number;
  /** Why the run ended before its window did (e.g. the backlog ran out). */
  readonly stoppedEarly?: string;
  readonly cpu: ResourceUse;
  /** Clients nats-server disconnected as slow consumers during the run (its /varz counter). */
  readonly natsSlowConsumers?: number;
  /** What most likely limited this figure. */
  readonly limit: string;
  /** When this is the mean of several runs: each of them. */
  readonly runs?: readonly RunResult[];
}

export function summarize(
  window: Window,
  resources: ResourceUse,
  latency: Recorder,
  throughput: Recorder,
  extra: { ack?: Recorder; gateways: number; side: "raw" | "gateway"; concurrency: number },
): RunResult {
  const p = percentiles(latency.samples);
  const a = extra.ack ? percentiles(extra.ack.samples) : null;
  const errors = latency.errors + (extra.ack && extra.ack !== latency ? extra.ack.errors : 0);
  const kinds = new Map(latency.errorKinds);
  if (extra.ack && extra.ack !== latency) {
    for (const [k, v] of extra.ack.errorKinds) kinds.set(k, (kinds.get(k) ?? 0) + v);
  }
  const seconds = window.seconds;
  return {
    msgsPerSec: round(seconds > 0 ? throughput.messages / seconds : 0, 0),
    p50Ms: round(p.p50, 3),
    p99Ms: round(p.p99, 3),
    maxMs: round(p.max, 3),
    ...(a ? { ackP50Ms: round(a.p50, 3), ackP99Ms: round(a.p99, 3) } : {}),
    messages: throughput.messages,
    operations: latency.operations,
    errors,
    ...(kinds.size ? { errorKinds: Object.fromEntries(kinds) } : {}),
    seconds: round(seconds, 2),
    ...(window.stopReason ? { stoppedEarly: window.stopReason } : {}),
    cpu: {
      gatewayCpu: round(resources.gatewayCpu, 0),
      natsCpu: round(resources.natsCpu, 0),
      clientCpu: round(resources.clientCpu, 0),
      otherCpu: round(resources.otherCpu, 0),
      stealCpu: round(resources.stealCpu, 0),
      natsWriteMBps: round(resources.natsWriteMBps, 1),
    },
    limit: limitOf(resources, extra.side, extra.gateways, extra.concurrency),
  };
}

/**
 * A reading of the CPU figures: a single-threaded Node process near one full core is the limit;
 * otherwise a machine near all of its cores is; otherwise the in-flight requests' round trips.
 */
export function limitOf(
  r: ResourceUse,
  side: "raw" | "gateway",
  gateways: number,
  concurrency: number,
): string {
  const cores = availableParallelism();
  const ours: [string, number][] = [
    ["gateway", side === "gateway" ? r.gatewayCpu : 0],
    ["client", r.clientCpu || 0],
    ["NATS", r.natsCpu || 0],
  ];
  const [busiest, busiestCpu] = ours.sort((a, b) => b[1] - a[1])[0]!;
  const total =
    r.gatewayCpu + (r.natsCpu || 0) + (r.clientCpu || 0) + r.otherCpu + (r.stealCpu || 0);
  if (side === "gateway" && r.gatewayCpu >= 85 * gateways) return "gateway CPU";
  if (r.clientCpu >= 85) return "client CPU";
  if (total >= 85 * cores) {
    return `machine CPU (busiest: ${busiest} ${Math.round(busiestCpu)}%)`;
  }
  if (r.natsCpu >= 85 * cores * 0.5) return "NATS CPU";
  return concurrency <= 1 ? "round trip latency" : "round trips (none saturated)";
}

export interface ScenarioRow {
  readonly id: string;
  readonly kind: "publish" | "receive";
  readonly sizeBytes: number;
  readonly concurrency: number;
  readonly raw: RunResult;
  readonly gateway: RunResult;
  readonly ratio: { readonly throughput: number; readonly p50: number; readonly p99: number };
}

export function row(
  kind: ScenarioRow["kind"],
  sizeBytes: number,
  concurrency: number,
  raw: RunResult,
  gateway: RunResult,
): ScenarioRow {
  return {
    id: `${kind}-${sizeLabel(sizeBytes)}-${concurrency}`,
    kind,
    sizeBytes,
    concurrency,
    raw,
    gateway,
    ratio: {
      throughput: round(gateway.msgsPerSec / raw.msgsPerSec, 2),
      p50: round(gateway.p50Ms / raw.p50Ms, 2),
      p99: round(gateway.p99Ms / raw.p99Ms, 2),
    },
  };
}

export function sizeLabel(bytes: number): string {
  return bytes >= 1024 ? `${bytes / 1024} KiB` : `${bytes} B`;
}

const KIND_LABEL: Record<ScenarioRow["kind"], string> = {
  publish: "publish",
  receive: "receive 10 + ack",
};

function fmt(n: number, digits = 1): string {
  if (!Number.isFinite(n)) return "n/a";
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(digits);
}

export function markdownTable(rows: readonly ScenarioRow[]): string {
  const head = [
    "scenario",
    "size",
    "in flight",
    "raw msg/s",
    "gateway msg/s",
    "gw/raw",
    "raw p50 / p99 ms",
    "gateway p50 / p99 ms",
    "p99 gw/raw",
    "gateway run CPU % gw / nats / client / other / steal",
    "gateway run limit",
  ];
  const lines = [
    `| ${head.join(" | ")} |`,
    `| ${head.map((_h, i) => (i < 2 ? "---" : i === head.length - 1 ? "---" : "---:")).join(" | ")} |`,
  ];
  for (const r of rows) {
    const g = r.gateway;
    const note = [r.raw.stoppedEarly, g.stoppedEarly].some(Boolean) ? " *" : "";
    const slow = (r.raw.natsSlowConsumers ?? 0) + (g.natsSlowConsumers ?? 0);
    const errs =
      (r.raw.errors + g.errors > 0 ? `; errors: raw ${r.raw.errors}, gw ${g.errors}` : "") +
      (slow > 0
        ? `; NATS cut slow consumers: raw ${r.raw.natsSlowConsumers ?? 0}, gw ${g.natsSlowConsumers ?? 0}`
        : "");
    lines.push(
      `| ${KIND_LABEL[r.kind]}${note} | ${sizeLabel(r.sizeBytes)} | ${r.concurrency} | ` +
        `${fmt(r.raw.msgsPerSec)} | ${fmt(g.msgsPerSec)} | ${r.ratio.throughput.toFixed(2)} | ` +
        `${fmt(r.raw.p50Ms, 2)} / ${fmt(r.raw.p99Ms, 2)} | ${fmt(g.p50Ms, 2)} / ${fmt(g.p99Ms, 2)} | ` +
        `${r.ratio.p99.toFixed(2)} | ` +
        `${fmt(g.cpu.gatewayCpu, 0)} / ${fmt(g.cpu.natsCpu, 0)} / ${fmt(g.cpu.clientCpu, 0)} / ${fmt(g.cpu.otherCpu, 0)} / ${fmt(g.cpu.stealCpu, 0)} | ` +
        `${g.limit}${errs} |`,
    );
  }
  return lines.join("\n");
}

export interface Target {
  readonly name: string;
  readonly target: string;
  readonly value: number | null;
  readonly pass: boolean | null;
  readonly note?: string;
}

export function targetsTable(targets: readonly Target[]): string {
  const lines = ["| target | wanted | measured | result |", "| --- | --- | ---: | --- |"];
  for (const t of targets) {
    const result = t.pass === null ? "not run" : t.pass ? "PASS" : "FAIL";
    const value = t.value === null || !Number.isFinite(t.value) ? "n/a" : t.value.toFixed(2);
    lines.push(`| ${t.name} | ${t.target} | ${value} | ${result}${t.note ? ` (${t.note})` : ""} |`);
  }
  return lines.join("\n");
}

// Where a small publish waits while large uploads run: what the gateway's /metrics (event-loop
// delay, its own JetStream publish round trips), /proc (CPU of the gateway and of nats-server)
// and nats-server's /connz (bytes the server holds for each client) say over one phase. If the
// gateway's publish round trip is as slow as the HTTP answer, the wait is on the NATS side.
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { BenchNats } from "../nats-server.js";
import { cpuPercent, sampleProc, type ProcSample } from "../proc.js";
import { round } from "../stats.js";

export interface PhaseDiagnosis {
  readonly gatewayCpuPercent: number;
  readonly natsCpuPercent: number;
  /** The gateway's event-loop delay over the phase (prom-client's monitorEventLoopDelay). */
  readonly eventLoopDelayP99Ms: number;
  readonly eventLoopDelayMaxMs: number;
  /** The main (uploading) process's own event-loop delay p99; the small publisher reports its own. */
  readonly clientEventLoopDelayP99Ms: number;
  /** The gateway's small publishes into JetStream (not chunks): count, mean, bucketed p99. */
  readonly natsPublishes: number;
  readonly natsPublishMeanMs: number;
  readonly natsPublishP99Ms: number;
  /** Large-body bytes the gateway took in over the phase, per second (MB of 10^6). */
  readonly largeInMBps: number;
  /** Most bytes nats-server held to send to any one client connection, sampled. */
  readonly serverPendingMaxBytes: number;
  /** MB a second nats-server sent to storage (its stream writes; /proc/<pid>/io write_bytes). */
  readonly natsWriteMBps: number;
  /**
   * Share of the phase in which some task of the machine waited for a core (CPU) or for I/O
   * (/proc/pressure "some" totals; NaN without PSI): whether the wait is the CPU or the disk.
   */
  readonly cpuPressurePercent: number;
  readonly ioPressurePercent: number;
  /**
   * The gateway's garbage collections over the phase, per kind (minor, major, incremental,
   * weakcb): how many, and the ms they took (prom-client's nodejs_gc_duration_seconds).
   */
  readonly gatewayGc: Record<string, { count: number; ms: number }>;
}

/** The "some" stall total (microseconds) of /proc/pressure/<what>, or NaN. */
function pressureTotal(what: "cpu" | "io"): number {
  try {
    const line = readFileSync(`/proc/pressure/${what}`, "utf8").split("\n")[0] ?? "";
    return Number(/total=(\d+)/.exec(line)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

interface Scrape {
  readonly buckets: Map<number, number>;
  readonly sum: number;
  readonly count: number;
  readonly lagP99: number;
  readonly lagMax: number;
  readonly largeIn: number;
  readonly gc: Map<string, { count: number; sum: number }>;
}

async function scrape(metricsUrl: string): Promise<Scrape | null> {
  try {
    const text = await (await fetch(metricsUrl)).text();
    const buckets = new Map<number, number>();
    let sum = 0;
    let count = 0;
    let lagP99 = NaN;
    let lagMax = NaN;
    let largeIn = 0;
    const gc = new Map<string, { count: number; sum: number }>();
    for (const line of text.split("\n")) {
      const value = Number(line.slice(line.lastIndexOf(" ") + 1));
      const gcLine = /^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\}/.exec(line);
      if (gcLine?.[1] && gcLine[2]) {
        const k = gc.get(gcLine[2]) ?? { count: 0, sum: 0 };
        if (gcLine[1] === "sum") k.sum = value;
        else k.count = value;
        gc.set(gcLine[2], k);
      }
      if (line.startsWith('vqs_large_body_bytes_total{direction="in"}')) largeIn = value;
      if (line.startsWith("nodejs_eventloop_lag_p99_seconds")) lagP99 = value;
      else if (line.startsWith("nodejs_eventloop_lag_max_seconds")) lagMax = value;
      if (!line.includes('operation="publish"')) continue;
      if (line.startsWith("vqs_jetstream_request_duration_seconds_bucket")) {
        const le = /le="([^"]+)"/.exec(line)?.[1];
        if (le) buckets.set(le === "+Inf" ? Infinity : Number(le), value);
      } else if (line.startsWith("vqs_jetstream_request_duration_seconds_sum")) sum = value;
      else if (line.startsWith("vqs_jetstream_request_duration_seconds_count")) count = value;
    }
    return { buckets, sum, count, lagP99, lagMax, largeIn, gc };
  } catch {
    return null;
  }
}

/** The upper bound of the bucket holding the q-quantile of the counts added between a and b. */
function bucketQuantile(a: Scrape, b: Scrape, q: number): number {
  const n = b.count - a.count;
  if (n <= 0) return NaN;
  for (const [le, c] of [...b.buckets].sort((x, y) => x[0] - y[0])) {
    if (c - (a.buckets.get(le) ?? 0) >= q * n) return le;
  }
  return Infinity;
}

export interface PhaseWatch {
  stop(): Promise<PhaseDiagnosis>;
}

/** Starts watching; `stop()` says what happened since (the event-loop figures reset per scrape). */
export async function watchPhase(
  /** The gateway's exposition (its metrics port's /metrics). */
  metricsUrl: string,
  gatewayPid: number,
  nats: BenchNats,
): Promise<PhaseWatch> {
  const first = await scrape(metricsUrl);
  const t0 = performance.now();
  const gw0: ProcSample | null = sampleProc(gatewayPid);
  const nats0: ProcSample | null = sampleProc(nats.pid);
  const cpuStall0 = pressureTotal("cpu");
  const ioStall0 = pressureTotal("io");
  const clientDelay = monitorEventLoopDelay({ resolution: 10 });
  clientDelay.enable();
  let pendingMax = 0;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const connz = await nats.monitor("/connz?limit=64");
      const conns = (connz?.connections ?? []) as { pending_bytes?: number }[];
      for (const c of conns) pendingMax = Math.max(pendingMax, c.pending_bytes ?? 0);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      polling = false;
      await poll;
      const seconds = (performance.now() - t0) / 1000;
      const last = await scrape(metricsUrl);
      clientDelay.disable();
      const ok = first && last;
      const nats1 = sampleProc(nats.pid);
      const stalled = (what: "cpu" | "io", t0: number) =>
        round(((pressureTotal(what) - t0) / 1e6 / seconds) * 100, 0);
      const n = ok ? last.count - first.count : 0;
      return {
        gatewayCpuPercent: round(cpuPercent(gw0, sampleProc(gatewayPid), seconds), 0),
        natsCpuPercent: round(cpuPercent(nats0, nats1, seconds), 0),
        eventLoopDelayP99Ms: round((last?.lagP99 ?? NaN) * 1000, 1),
        eventLoopDelayMaxMs: round((last?.lagMax ?? NaN) * 1000, 1),
        clientEventLoopDelayP99Ms: round(clientDelay.percentile(99) / 1e6, 1),
        natsPublishes: n,
        natsPublishMeanMs: ok && n > 0 ? round(((last.sum - first.sum) / n) * 1000, 2) : NaN,
        natsPublishP99Ms: ok ? round(bucketQuantile(first, last, 0.99) * 1000, 1) : NaN,
        largeInMBps: ok ? round((last.largeIn - first.largeIn) / 1e6 / seconds, 1) : NaN,
        serverPendingMaxBytes: pendingMax,
        natsWriteMBps:
          nats0 && nats1 ? round((nats1.writeBytes - nats0.writeBytes) / 1e6 / seconds, 1) : NaN,
        cpuPressurePercent: stalled("cpu", cpuStall0),
        ioPressurePercent: stalled("io", ioStall0),
        gatewayGc: Object.fromEntries(
          [...(last?.gc ?? new Map<string, { count: number; sum: number }>())].map(([k, v]) => {
            const was = first?.gc.get(k) ?? { count: 0, sum: 0 };
            return [k, { count: v.count - was.count, ms: round((v.sum - was.sum) * 1000, 1) }];
          }),
        ),
      };
    },
  };
}

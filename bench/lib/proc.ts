// Per-process resource readings from /proc (Linux): CPU seconds, resident memory and bytes
// written to storage, so each scenario can say whose CPU (load generator, gateway, NATS) or which
// disk it used. Elsewhere the readings are null and the report says "n/a".
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on every Linux we know). */
const CLK_TCK = 100;

export interface ProcSample {
  /** user + system CPU seconds so far. */
  readonly cpuSeconds: number;
  readonly rssBytes: number;
  /** Bytes this process caused to be sent to storage (/proc/<pid>/io write_bytes). */
  readonly writeBytes: number;
}

export function sampleProc(pid: number | "self"): ProcSample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may contain spaces.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    let writeBytes = 0;
    try {
      const io = readFileSync(`/proc/${pid}/io`, "utf8");
      writeBytes = Number(/write_bytes:\s+(\d+)/.exec(io)?.[1] ?? 0);
    } catch {
      // /proc/<pid>/io may be unreadable (capabilities); writes then read as 0.
    }
    return {
      cpuSeconds: (utime + stime) / CLK_TCK,
      rssBytes: rssKb * 1024,
      writeBytes,
    };
  } catch {
    return null;
  }
}

/** CPU use between two samples, as a percentage of one core. */
export function cpuPercent(a: ProcSample | null, b: ProcSample | null, seconds: number): number {
  if (!a || !b || seconds <= 0) return NaN;
  return ((b.cpuSeconds - a.cpuSeconds) / seconds) * 100;
}

/** Load average over the last minute (how busy the machine was with other work, too). */
export function loadAverage(): number {
  try {
    return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  } catch {
    return NaN;
  }
}

export interface MachineSample {
  /** CPU seconds spent busy, summed over all cores (user, nice, system, irq, softirq). */
  readonly busySeconds: number;
  /** CPU seconds the hypervisor gave to other guests while this one wanted to run. */
  readonly stealSeconds: number;
}

/** Machine-wide CPU time (/proc/stat), to tell how much other processes and the host took. */
export function sampleMachine(): MachineSample | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return {
      busySeconds: (user + nice + system + irq + softirq) / CLK_TCK,
      stealSeconds: steal / CLK_TCK,
    };
  } catch {
    return null;
  }
}

/**
 * Bounds a benchmark run: after `limitMs`, or on SIGINT/SIGTERM, `cleanup` stops the processes
 * it started and the run exits (2 at the limit, 130/143 on a signal). Returns what ends the time
 * limit (a run that finished).
 */
export function boundRun(
  cleanup: () => Promise<void>,
  limitMs: number,
  log: (s: string) => void,
): () => void {
  const watchdog = setTimeout(() => {
    log(`time limit of ${limitMs / 60_000} min reached: stopping`);
    void cleanup().finally(() => process.exit(2));
  }, limitMs);
  watchdog.unref();
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.once(signal, () => void cleanup().finally(() => process.exit(code)));
  }
  return () => clearTimeout(watchdog);
}

/** Stops `child`: SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export function childStopper(child: ChildProcess, graceMs: number): () => Promise<void> {
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
}

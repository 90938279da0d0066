// What else the machine did over a latency phase: every process's CPU (the busiest few by name,
// kernel threads included), the machine's CPU split (user, system, iowait, softirq, steal), its
// dirty and written-back page cache, and the state of the large-body stream in nats-server. So a
// phase that is slower in a full run than alone can say whose work it waited behind.
import { readdirSync, readFileSync } from "node:fs";
import type { BenchNats } from "../nats-server.js";
import { round } from "../stats.js";

const CLK_TCK = 100;

/** CPU ticks so far of every process, by pid, with its name. */
function allProcs(): Map<number, { name: string; ticks: number; ppid: number }> {
  const out = new Map<number, { name: string; ticks: number; ppid: number }>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(Number(d), {
        name,
        ticks: Number(rest[11]) + Number(rest[12]),
        ppid: Number(rest[1]),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** /proc/stat's first line: user, nice, system, idle, iowait, irq, softirq, steal (ticks). */
function machineTicks(): number[] {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    return line.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return [];
  }
}

function vmstat(): Map<string, number> {
  const m = new Map<string, number>();
  try {
    for (const line of readFileSync("/proc/vmstat", "utf8").split("\n")) {
      const [k, v] = line.split(" ");
      if (k && v) m.set(k, Number(v));
    }
  } catch {
    // not Linux
  }
  return m;
}

/** The body stream's state (messages, bytes, deleted) from nats-server's /jsz, or null. */
async function bodyStream(nats: BenchNats): Promise<Record<string, number> | null> {
  const jsz = await nats.monitor("/jsz?streams=true");
  type Stream = { name?: string; state?: Record<string, unknown> };
  const accounts = (jsz?.account_details ?? []) as { stream_detail?: Stream[] }[];
  for (const a of accounts) {
    for (const s of a.stream_detail ?? []) {
      if (s.name !== "VQS_BODIES" || !s.state) continue;
      const st = s.state;
      const n = (k: string) => (typeof st[k] === "number" ? st[k] : NaN);
      return {
        messages: n("messages"),
        mb: round(n("bytes") / 1e6, 1),
        deleted: n("num_deleted"),
        subjects: n("num_subjects"),
      };
    }
  }
  return null;
}

export interface MachineDiagnosis {
  /** The busiest processes over the phase, "name(pid)": % of one core. */
  readonly topProcesses: Record<string, number>;
  /** The machine's CPU over the phase, % of all its cores together (200 % = both cores busy). */
  readonly machineCpu: Record<"user" | "system" | "iowait" | "softirq" | "steal" | "idle", number>;
  /** Page cache written back to disk over the phase (MB/s), and dirty pages at its end (MB). */
  readonly writebackMBps: number;
  readonly dirtyMBAtEnd: number;
  /** The large-body stream at the phase's start and end (from /jsz). */
  readonly bodyStream: { start: Record<string, number> | null; end: Record<string, number> | null };
}

export interface MachineWatch {
  stop(): Promise<MachineDiagnosis>;
}

export async function watchMachine(
  nats: BenchNats,
  labels: Map<number, string>,
): Promise<MachineWatch> {
  const t0 = performance.now();
  const procs0 = allProcs();
  const cpu0 = machineTicks();
  const vm0 = vmstat();
  const stream0 = await bodyStream(nats);
  return {
    async stop() {
      const seconds = (performance.now() - t0) / 1000;
      const procs1 = allProcs();
      const cpu1 = machineTicks();
      const vm1 = vmstat();
      const used: [string, number][] = [];
      // A process the bench started (a child of this one at any depth) is marked "bench:".
      const ours = (pid: number) => {
        for (let p = procs1.get(pid), n = 0; p && n < 32; p = procs1.get(p.ppid), n++) {
          if (p.ppid === process.pid) return true;
        }
        return false;
      };
      for (const [pid, p] of procs1) {
        const before = procs0.get(pid)?.ticks ?? 0;
        const pct = ((p.ticks - before) / CLK_TCK / seconds) * 100;
        const name = labels.get(pid) ?? (ours(pid) ? `bench:${p.name}` : p.name);
        if (pct >= 1) used.push([`${name}(${pid})`, round(pct, 0)]);
      }
      used.sort((a, b) => b[1] - a[1]);
      const d = (i: number) => (((cpu1[i] ?? NaN) - (cpu0[i] ?? NaN)) / CLK_TCK / seconds) * 100;
      const page = 4096;
      return {
        topProcesses: Object.fromEntries(used.slice(0, 10)),
        machineCpu: {
          user: round(d(0) + d(1), 0),
          system: round(d(2) + d(5), 0),
          iowait: round(d(4), 0),
          softirq: round(d(6), 0),
          steal: round(d(7), 0),
          idle: round(d(3), 0),
        },
        writebackMBps: round(
          (((vm1.get("nr_written") ?? NaN) - (vm0.get("nr_written") ?? NaN)) * page) /
            1e6 /
            seconds,
          1,
        ),
        dirtyMBAtEnd: round(((vm1.get("nr_dirty") ?? NaN) * page) / 1e6, 1),
        bodyStream: { start: stream0, end: await bodyStream(nats) },
      };
    },
  };
}

// Lets the machine settle between bench:large's scenarios: the page cache the earlier scenarios
// dirtied is written out (`sync`), then the wait goes on until nats-server and the gateway are
// both near idle (their deletes, compactions and collections done). What settling took is
// reported, so a scenario's tail is measured, not hidden: it is the cost of the scenario before,
// not of the one that follows (docs: bench/README.md, "Large bodies").
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { sampleProc } from "../proc.js";
import { round, sleep } from "../stats.js";

const run = promisify(execFile);

export interface Settled {
  /** Seconds `sync` took (writing out what the page cache held dirty). */
  readonly syncSeconds: number;
  /** Seconds waited for the processes to go idle after it, and whether they did. */
  readonly idleSeconds: number;
  readonly idle: boolean;
  /** CPU seconds each watched process used while settling. */
  readonly cpuSeconds: Record<string, number>;
}

/** Below this share of one core over a 500 ms sample, a process counts as idle. */
const IDLE_PERCENT = 5;

export async function settle(pids: Record<string, number>, maxSeconds: number): Promise<Settled> {
  const before = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => [k, sampleProc(pid)?.cpuSeconds ?? NaN]),
  );
  const t0 = performance.now();
  await run("sync").catch(() => undefined);
  const t1 = performance.now();
  let idle = false;
  while (!idle && (performance.now() - t0) / 1000 < maxSeconds) {
    const a = Object.values(pids).map((pid) => sampleProc(pid)?.cpuSeconds ?? 0);
    await sleep(500);
    const b = Object.values(pids).map((pid) => sampleProc(pid)?.cpuSeconds ?? 0);
    idle = a.every((x, i) => (((b[i] ?? 0) - x) / 0.5) * 100 < IDLE_PERCENT);
  }
  return {
    syncSeconds: round((t1 - t0) / 1000, 2),
    idleSeconds: round((performance.now() - t1) / 1000, 1),
    idle,
    cpuSeconds: Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => [
        k,
        round((sampleProc(pid)?.cpuSeconds ?? NaN) - (before[k] ?? NaN), 2),
      ]),
    ),
  };
}

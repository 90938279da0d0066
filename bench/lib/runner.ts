// Runs N concurrent workers for a warm-up plus a measuring window, and reads every process's CPU,
// memory and disk writes at the window's start and end.
import {
  cpuPercent,
  sampleMachine,
  sampleProc,
  type MachineSample,
  type ProcSample,
} from "./proc.js";
import { sleep } from "./stats.js";

export interface Processes {
  readonly gatewayPids: readonly number[];
  readonly natsPid: number;
}

export interface ResourceUse {
  /** CPU of every gateway process together, % of one core. */
  readonly gatewayCpu: number;
  readonly natsCpu: number;
  /** The load generator (this process). */
  readonly clientCpu: number;
  /** Everything else on the machine (other processes), % of one core. */
  readonly otherCpu: number;
  /** CPU the hypervisor took for other guests (steal), % of one core. */
  readonly stealCpu: number;
  /** What nats-server wrote to storage, MB/s. */
  readonly natsWriteMBps: number;
}

interface Snapshot {
  readonly at: number;
  readonly gateways: (ProcSample | null)[];
  readonly nats: ProcSample | null;
  readonly self: ProcSample | null;
  readonly machine: MachineSample | null;
}

function snapshot(p: Processes): Snapshot {
  return {
    at: performance.now(),
    gateways: p.gatewayPids.map((pid) => sampleProc(pid)),
    nats: sampleProc(p.natsPid),
    self: sampleProc("self"),
    machine: sampleMachine(),
  };
}

function resourceUse(a: Snapshot, b: Snapshot): ResourceUse {
  const seconds = (b.at - a.at) / 1000;
  const gatewayCpu = a.gateways.reduce(
    (sum, s, i) => sum + (cpuPercent(s, b.gateways[i] ?? null, seconds) || 0),
    0,
  );
  const natsCpu = cpuPercent(a.nats, b.nats, seconds);
  const clientCpu = cpuPercent(a.self, b.self, seconds);
  const machine =
    a.machine && b.machine
      ? ((b.machine.busySeconds - a.machine.busySeconds) / seconds) * 100
      : NaN;
  const steal =
    a.machine && b.machine
      ? ((b.machine.stealSeconds - a.machine.stealSeconds) / seconds) * 100
      : NaN;
  const written = a.nats && b.nats ? b.nats.writeBytes - a.nats.writeBytes : NaN;
  return {
    gatewayCpu,
    natsCpu,
    clientCpu,
    otherCpu: Math.max(0, machine - gatewayCpu - (natsCpu || 0) - (clientCpu || 0)),
    stealCpu: steal,
    natsWriteMBps: written / seconds / 1e6,
  };
}

/** The measuring window of one run: operations completing inside it are counted. */
export class Window {
  readonly start: number;
  readonly end: number;
  #stoppedAt: number | null = null;
  #stopReason: string | null = null;

  constructor(warmupMs: number, durationMs: number) {
    this.start = performance.now() + warmupMs;
    this.end = this.start + durationMs;
  }

  /** Whether an operation that completed at `t` counts. */
  counts(t: number): boolean {
    return t >= this.start && t <= (this.#stoppedAt ?? this.end);
  }

  /** Whether workers should start another operation. */
  running(): boolean {
    return this.#stoppedAt === null && performance.now() < this.end;
  }

  /** Ends the run early (e.g. the backlog ran out); the window is cut there. */
  stop(reason: string): void {
    if (this.#stoppedAt !== null) return;
    this.#stoppedAt = performance.now();
    this.#stopReason = reason;
  }

  get stopReason(): string | null {
    return this.#stopReason;
  }

  /** Length of the measuring window actually covered, in seconds. */
  get seconds(): number {
    const end = Math.min(this.#stoppedAt ?? this.end, this.end);
    return Math.max(0, (end - this.start) / 1000);
  }
}

export interface DriveResult {
  readonly window: Window;
  readonly resources: ResourceUse;
}

/**
 * Runs `concurrency` workers, each calling `op` until the window ends (or `maxOpsPerWorker`).
 * `op` does its own timing and recording (`window.counts(t)`); it must not throw.
 */
export async function drive(
  p: Processes,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  op: (worker: number, window: Window) => Promise<void>,
  maxOpsPerWorker = 10_000_000,
): Promise<DriveResult> {
  const window = new Window(warmupMs, durationMs);
  const snaps: { first?: Snapshot; last?: Snapshot } = {};
  const startTimer = setTimeout(() => {
    snaps.first = snapshot(p);
  }, warmupMs);
  // The end snapshot: at the window's end, or when the run stops early.
  const endWatch = (async () => {
    for (let i = 0; i < 100_000 && window.running(); i++) {
      await sleep(Math.max(1, Math.min(20, window.end - performance.now())));
    }
    snaps.last = snapshot(p);
  })();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; i < maxOpsPerWorker && window.running(); i++) await op(w, window);
    }),
  );
  await endWatch;
  clearTimeout(startTimer);
  const a = snaps.first ?? snapshot(p);
  const b = snaps.last ?? snapshot(p);
  return { window, resources: resourceUse(a, b) };
}

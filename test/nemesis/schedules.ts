// Fault schedules: "short" (each fault once, for CI), "pauses" (the schedule that caught issue
// #16: the stream leader, then a follower, SIGSTOPped for 8 s each, under 8 keyed publishers that
// retry a non-201 up to 3 times), and "random" (seeded: kinds, targets and durations drawn from
// the seed), and "kills" (the cluster fault test's). A schedule also says which workload runs under
// it.
import {
  diskFull,
  killEachNode,
  killNode,
  partition,
  pauseGateway,
  pauseNode,
  skewGateway,
  type Fault,
} from "./faults.js";
import { DEFAULT_WORKLOAD, type WorkloadOptions } from "./workload.js";

export type ScheduleName = "short" | "pauses" | "kills" | "random";

export interface Schedule {
  readonly name: ScheduleName;
  /** The faults in order, with the pause after each (the cluster settles). */
  readonly steps: readonly { readonly fault: Fault; readonly gapMs: number }[];
  readonly workload: Omit<WorkloadOptions, "gateways" | "random">;
}

/** mulberry32: a small seeded generator, so a seed names one schedule. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Issue #16's pause schedule: the stream leader, then a follower, 8 s each. */
export const PAUSES_STEPS = [
  { fault: pauseNode("leader", 8000), gapMs: 2000 },
  { fault: pauseNode("follower", 8000), gapMs: 3000 },
];

/** Issue #16's workload: 8 publishers, every publish keyed, retried up to 3 times; 2 consumers. */
export const PAUSES_WORKLOAD = {
  ...DEFAULT_WORKLOAD,
  keyedFraction: 1,
  delayedFraction: 0,
  publishIntervalMs: 20,
};

export function shortSchedule(): Schedule {
  return {
    name: "short",
    workload: DEFAULT_WORKLOAD,
    steps: [
      { fault: killNode("leader", 5000), gapMs: 5000 },
      ...PAUSES_STEPS,
      { fault: pauseGateway(0, 8000), gapMs: 3000 },
      { fault: partition("isolate", "leader", 12_000), gapMs: 5000 },
      { fault: partition("split", "leader", 12_000), gapMs: 5000 },
      { fault: skewGateway(1, 5 * 60_000, 15_000), gapMs: 3000 },
      // Waits 10 s for the store to recover by itself before restarting the nodes.
      { fault: diskFull(10_000, 10_000), gapMs: 3000 },
    ],
  };
}

export function pausesSchedule(): Schedule {
  return { name: "pauses", workload: PAUSES_WORKLOAD, steps: PAUSES_STEPS };
}

/**
 * test/faults/cluster-faults.test.ts's schedule (each node SIGKILLed in turn, the leader first,
 * 2.5 s down and 2.5 s up) and its workload (plain publishes, 5 s leases): three times on
 * nats-server 2.9.10 that test ended with acknowledged messages not received within its 30 s
 * drain. The soak runs it with a longer drain to tell late from gone.
 */
export function killsSchedule(): Schedule {
  return {
    name: "kills",
    workload: {
      ...DEFAULT_WORKLOAD,
      producers: 2,
      keyedFraction: 0,
      delayedFraction: 0,
      publishIntervalMs: 5,
      skipAckFraction: 0,
    },
    steps: [{ fault: killEachNode(2500, 2500), gapMs: 1000 }],
  };
}

/** Random faults until `durationMs` of faults and gaps are planned. */
export function randomSchedule(random: () => number, durationMs: number): Schedule {
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  const target = () => (random() < 0.6 ? "leader" : "follower");
  const one = (fault: Fault, ms: number) => ({
    steps: [{ fault, gapMs: between(3000, 10_000) }],
    ms,
  });
  const makers: (() => { steps: { fault: Fault; gapMs: number }[]; ms: number })[] = [
    () => one(killNode(target(), between(2000, 10_000)), 10_000),
    () => one(pauseNode(target(), between(5000, 15_000)), 15_000),
    () => one(pauseGateway(between(0, 1), between(3000, 12_000)), 12_000),
    () => one(partition("isolate", target(), between(5000, 20_000)), 20_000),
    () => one(partition("split", target(), between(5000, 20_000)), 20_000),
    () => {
      const minutes = between(1, 10) * (random() < 0.5 ? -1 : 1);
      return one(skewGateway(between(0, 1), minutes * 60_000, between(10_000, 70_000)), 70_000);
    },
    () => one(diskFull(between(5000, 15_000)), 45_000),
    () => ({ steps: PAUSES_STEPS, ms: 21_000 }),
  ];
  const steps: { fault: Fault; gapMs: number }[] = [];
  for (let planned = 0; planned < durationMs;) {
    const made = makers[Math.floor(random() * makers.length)]!();
    steps.push(...made.steps);
    planned += made.ms + made.steps.reduce((n, x) => n + x.gapMs, 0);
  }
  return { name: "random", workload: DEFAULT_WORKLOAD, steps };
}

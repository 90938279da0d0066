// One flow-control nemesis round on a fresh topic: both groups' flowControl settings stored, the
// flow workload started, the faults run one after the other (each healed), the producers stop,
// the groups drain, and the flow checker judges each group on the history.
import { checkFlow, type FlowReport } from "./check/flow-checker.js";
import { readHistory } from "./check/history.js";
import { streamOf } from "./check/inspect.js";
import type { Fault } from "./faults.js";
import {
  FLOW_CONCURRENCY,
  FLOW_RATE,
  FLOW_SETTINGS,
  FlowWorkload,
  ORDERED_GROUP,
  RATED_GROUP,
} from "./flow-workload.js";
import type { NemesisEnvironment } from "./lab/environment.js";
import { openRound } from "./round.js";
import { attemptUntil } from "../helpers/wait.js";

export interface FlowRoundOptions {
  readonly label: string;
  readonly topic: string;
  readonly steps: readonly { readonly fault: Fault; readonly gapMs: number }[];
  readonly random: () => number;
  readonly drainMs: number;
  readonly keys?: number;
  readonly log?: (line: string) => void;
}

export interface FlowRoundResult {
  readonly historyPath: string;
  readonly stored: number;
  readonly missing: Record<string, number>;
  readonly ordered: FlowReport;
  readonly rated: FlowReport;
  readonly durationMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runFlowRound(
  env: NemesisEnvironment,
  o: FlowRoundOptions,
): Promise<FlowRoundResult> {
  const log = o.log ?? (() => undefined);
  const started = Date.now();
  const { historyPath, history, client } = await openRound(env, {
    ...o,
    schedule: `flow:${o.label}`,
    seed: 0,
  });
  for (const [group, settings] of Object.entries(FLOW_SETTINGS)) {
    let tries = 0;
    const status = await attemptUntil(
      () => client.putSettings(tries++ % 2, group, settings).catch(() => 0),
      (s) => s >= 200 && s < 300,
      { tries: 30, everyMs: 500 },
    );
    if (status < 200 || status >= 300) throw new Error(`${group}'s settings: ${status}`);
  }
  const workload = new FlowWorkload(client, {
    gateways: env.gateways.length,
    keys: o.keys ?? 20,
    producers: 4,
    consumers: 2,
    publishIntervalMs: 40,
    skipAckFraction: 0.03,
    random: o.random,
  });
  const ctx = {
    env,
    history,
    client,
    stream: streamOf(o.topic),
    random: o.random,
    noteStored: () => undefined,
  };
  workload.start();
  try {
    await sleep(3000);
    for (const step of o.steps) {
      log(`  ${o.label}: ${step.fault.name}`);
      await step.fault.run(ctx);
      await sleep(step.gapMs);
    }
  } finally {
    for (const n of env.nodes.nodes) n.resume();
    for (const g of env.gateways) g.resume();
  }
  await workload.stopProducers();
  history.write({ type: "nemesis", fault: "drain", phase: "start" });
  await workload.drain(o.drainMs);
  const missing = {
    [ORDERED_GROUP]: workload.missing(ORDERED_GROUP).length,
    [RATED_GROUP]: workload.missing(RATED_GROUP).length,
  };
  history.write({ type: "nemesis", fault: "drain", phase: "end", info: missing });
  await history.close();
  const lines = readHistory(historyPath);
  return {
    historyPath,
    stored: workload.stored,
    missing,
    ordered: checkFlow(lines, { group: ORDERED_GROUP, ordered: true }),
    rated: checkFlow(lines, { group: RATED_GROUP, concurrency: FLOW_CONCURRENCY, rate: FLOW_RATE }),
    durationMs: Date.now() - started,
  };
}

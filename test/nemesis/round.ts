// One nemesis round on a fresh topic: the workload starts, the schedule's faults run one after the
// other (each healed), the producers stop, the group drains (leases and delays run out), a fresh
// group reads the whole topic, the stream is inspected, and the checker reads the history.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { check, DEFAULT_CHECK, type CheckReport } from "./check/checker.js";
import { RecordingClient } from "./client.js";
import type { NemesisEnvironment } from "./lab/environment.js";
import { openHistory, readHistory, type NemesisEvent } from "./check/history.js";
import { inspectTopic, streamOf, type Inspection } from "./check/inspect.js";
import type { Schedule } from "./schedules.js";
import { AUDIT_GROUP, GROUP, Workload } from "./workload.js";

export interface RoundOptions {
  readonly label: string;
  readonly topic: string;
  readonly schedule: Schedule;
  readonly seed: number;
  readonly random: () => number;
  /** How long the drain may wait for the group to acknowledge every stored publish. */
  readonly drainMs: number;
  /** Load before the first fault. */
  readonly warmupMs?: number;
  /** Progress lines (the soak prints them). */
  readonly log?: (line: string) => void;
}

export interface RoundResult {
  readonly label: string;
  readonly historyPath: string;
  readonly report: CheckReport;
  readonly inspection: Inspection | null;
  /** What the faults measured (leaders, skewed answers, disk recovery). */
  readonly faultInfo: readonly NemesisEvent[];
  readonly durationMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runRound(env: NemesisEnvironment, o: RoundOptions): Promise<RoundResult> {
  const log = o.log ?? (() => undefined);
  const started = Date.now();
  const historyPath = join(env.dir, `${o.label}.history.jsonl`);
  const history = openHistory(historyPath);
  history.write({
    type: "meta",
    startedAt: new Date().toISOString(),
    topic: o.topic,
    natsVersion: env.nodes.version,
    schedule: o.schedule.name,
    seed: o.seed,
  });
  const client = new RecordingClient(history, env.gateways, o.topic, env.token);
  // The topic's stream is made by the first publish (a new R3 stream may take a moment).
  for (let i = 0; i < 60; i++) {
    const r = await client.publish("setup", i % 2, null, `warm-up-${i}`, 0);
    if (r.status === 201) break;
    await sleep(500);
  }
  const stream = streamOf(o.topic);
  const workload = new Workload(client, {
    ...o.schedule.workload,
    gateways: env.gateways.length,
    random: o.random,
  });
  const ctx = {
    env,
    history,
    client,
    stream,
    random: o.random,
    noteStored: (body: string) => workload.noteStored(body),
  };
  workload.start();
  try {
    await sleep(o.warmupMs ?? 3000);
    for (const step of o.schedule.steps) {
      log(`  ${o.label}: ${step.fault.name}`);
      await step.fault.run(ctx);
      await sleep(step.gapMs);
    }
  } finally {
    // Whatever happened, nothing stays broken for the drain.
    await env.lab.heal();
    for (const n of env.nodes.nodes) n.resume();
    for (const g of env.gateways) {
      g.resume();
      if (g.skewable) await g.skew(0);
    }
    for (const d of env.nodes.disks) await d.free();
  }
  await workload.stopProducers();
  log(`  ${o.label}: drain (${workload.missing().length} not yet acknowledged by the group)`);
  history.write({ type: "nemesis", fault: "drain", phase: "start" });
  await workload.drain(o.drainMs);
  await workload.stop();
  history.write({
    type: "nemesis",
    fault: "drain",
    phase: "end",
    info: { missing: workload.missing().length },
  });
  await workload.audit(60_000);
  let inspection: Inspection | null = null;
  try {
    inspection = await inspectTopic(env.nodes.urls, o.topic, [GROUP, AUDIT_GROUP]);
  } catch (err) {
    history.write({
      type: "nemesis",
      fault: "inspect",
      phase: "info",
      info: { error: String(err) },
    });
  }
  await history.close();
  const lines = readHistory(historyPath);
  const report = check(lines, inspection, DEFAULT_CHECK);
  const faultInfo = lines.filter(
    (l): l is NemesisEvent => l.type === "nemesis" && l.info !== undefined,
  );
  const result: RoundResult = {
    label: o.label,
    historyPath,
    report,
    inspection,
    faultInfo,
    durationMs: Date.now() - started,
  };
  await writeFile(
    join(env.dir, `${o.label}.report.json`),
    JSON.stringify(
      { ...result, inspection: inspection && { ...inspection, stored: inspection.stored.length } },
      null,
      2,
    ),
  );
  return result;
}

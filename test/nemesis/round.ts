// One nemesis round on a fresh topic: a push endpoint starts and a group is set to push to it,
// the workload starts, the schedule's faults run one after the other (each healed), the producers
// stop, the polled group drains (leases and delays run out), then the pushed group (until its
// consumer has nothing pending and every stored publish was pushed), a fresh group reads the
// whole topic, the stream is inspected, and the checker reads the history.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { check, DEFAULT_CHECK, type CheckReport } from "./check/checker.js";
import { RecordingClient } from "./client.js";
import type { NemesisEnvironment } from "./lab/environment.js";
import { openHistory, readHistory, type NemesisEvent } from "./check/history.js";
import { groupOutstanding, inspectTopic, streamOf, type Inspection } from "./check/inspect.js";
import { startPushEndpoint, type PushEndpoint } from "./push-endpoint.js";
import type { Schedule } from "./schedules.js";
import { AUDIT_GROUP, GROUP, PUSH_GROUP, Workload } from "./workload.js";
import { attemptUntil, eventually } from "../helpers/wait.js";

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

/**
 * A round's history (its meta line written) and recording client, once the topic takes a
 * publish: its stream is made by the first one (a new R3 stream may take a moment).
 */
export async function openRound(
  env: NemesisEnvironment,
  o: {
    readonly label: string;
    readonly topic: string;
    readonly schedule: string;
    readonly seed: number;
  },
): Promise<{
  historyPath: string;
  history: ReturnType<typeof openHistory>;
  client: RecordingClient;
}> {
  const historyPath = join(env.dir, `${o.label}.history.jsonl`);
  const history = openHistory(historyPath);
  history.write({
    type: "meta",
    startedAt: new Date().toISOString(),
    topic: o.topic,
    natsVersion: env.nodes.version,
    schedule: o.schedule,
    seed: o.seed,
  });
  const client = new RecordingClient(history, env.gateways, o.topic, env.token);
  let warmUps = 0;
  await attemptUntil(
    async () => {
      const i = warmUps++;
      return (await client.publish("setup", i % 2, null, `warm-up-${i}`, 0)).status;
    },
    (status) => status === 201,
    { tries: 60, everyMs: 500 },
  );
  return { historyPath, history, client };
}

export async function runRound(env: NemesisEnvironment, o: RoundOptions): Promise<RoundResult> {
  const log = o.log ?? (() => undefined);
  const started = Date.now();
  const { historyPath, history, client } = await openRound(env, {
    ...o,
    schedule: o.schedule.name,
  });
  const endpoint = await startPushEndpoint(history, {
    host: env.lab.hostAddress,
    group: PUSH_GROUP,
    gateways: env.gateways.map((g) => new URL(g.url).hostname),
    failOneIn: PUSH_FAIL_ONE_IN,
    byId: { urls: env.gateways.map((g) => g.url), topic: o.topic, token: () => client.token },
  });
  try {
    await setUpPushedGroup(client, endpoint);
  } catch (err) {
    await endpoint.close();
    throw err;
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
  const drainEnd = Date.now() + o.drainMs;
  await workload.drain(o.drainMs);
  await workload.stop();
  // The pushed group gets at least 30 s of its own (the polled group's may have used it all).
  const pushed = await drainPushed(
    env,
    o.topic,
    workload,
    endpoint,
    Math.max(drainEnd, Date.now() + 30_000),
  );
  history.write({
    type: "nemesis",
    fault: "drain",
    phase: "end",
    info: { missing: workload.missing().length, pushed },
  });
  await workload.audit(60_000);
  let inspection: Inspection | null = null;
  try {
    inspection = await inspectTopic(env.nodes.urls, o.topic, [GROUP, PUSH_GROUP, AUDIT_GROUP]);
  } catch (err) {
    history.write({
      type: "nemesis",
      fault: "inspect",
      phase: "info",
      info: { error: String(err) },
    });
  }
  // Open until here: a push after the drain (a resurrection) is recorded too.
  await endpoint.close();
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

/** One first push in this many is answered 500 (the same messages in every run). */
export const PUSH_FAIL_ONE_IN = 25;

/** `autoAck` (a 2xx acknowledges), pushes bounded at 5 s, a failed push back 1 s later. */
async function setUpPushedGroup(client: RecordingClient, endpoint: PushEndpoint): Promise<void> {
  const settings = {
    push: { url: endpoint.url, maxConcurrency: 4, timeoutSeconds: 5, autoAck: true },
    retry: { afterSeconds: 1 },
  };
  let tries = 0;
  const status = await attemptUntil(
    () => client.putSettings(tries++ % 2, PUSH_GROUP, settings).catch(() => 0),
    (s) => s >= 200 && s < 300,
    { tries: 30, everyMs: 500 },
  );
  if (status >= 200 && status < 300) return;
  throw new Error(`the pushed group's settings were not stored (last answer ${status})`);
}

/**
 * Waits until every stored publish was pushed and answered 2xx, and the pushed group's consumer
 * has nothing pending or awaiting acknowledgement (or the deadline passed); tells what was left.
 */
async function drainPushed(
  env: NemesisEnvironment,
  topic: string,
  workload: Workload,
  endpoint: PushEndpoint,
  deadline: number,
): Promise<{ notPushed: number; outstanding: number | null }> {
  let notPushed = 0;
  let outstanding: number | null = null;
  await eventually(
    async () => {
      notPushed = workload.notIn(endpoint.done).length;
      outstanding = await groupOutstanding(env.nodes.urls, topic, PUSH_GROUP).catch(() => null);
      return notPushed === 0 && outstanding === 0;
    },
    Math.max(0, deadline - Date.now()),
    1000,
  );
  return { notPushed, outstanding };
}

// Workflow DevKit 5.x with WORKFLOW_SEQUENTIAL_REPLAYS=1: world-vercel sends each run's replays
// to a topic of its own under `__wkf_workflow_*`, and a step retried later to one of the step's
// (flow pushes at maxConcurrency 1, as the builder declares in that mode). A thousand real runs
// of the 5.x example app (examples/workflow-5: built by the 5.x builder, its World) pass through
// a namespace whose topic cap is a fifth of their number: they can all complete only because each
// settled topic is removed while the others run (settledTopicSeconds: 1); none is left. (With
// at most WINDOW runs before their step, the namespace held about 120 topics at once on a loaded
// 2-core machine: the cap leaves room for that, and the runs are five times the cap.)
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaceFilter, topicNames } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { sleep } from "../../helpers/http.js";
import { TEAM_A } from "../../helpers/issuer.js";
import { metricsByPrefix } from "../../helpers/metrics.js";
import { memoryTmpDir } from "../../helpers/processes/nats.js";
import { eventually } from "../../helpers/settings.js";
import {
  buildExampleApp,
  EXAMPLE_5_DIR,
  startWorkflowApp,
  type WorkflowApp,
} from "../../helpers/workflow-app.js";

/** Runs of `single` (one step), and of `retried` (a step, one that fails once, a step). */
const RUNS = 1000;
const RETRIED = 10;
const CAP = 200;
/** Runs started and not yet past their step, at most. */
const WINDOW = 40;
const DEPLOYMENT = "dpl_replays";
// Thousands of streams (and world-local's files) created and deleted: in memory, where the disk
// of a shared machine does not set the pace (nats-server spent 3 times the CPU on it).
const fx = useGateways(
  1,
  { env: { VQS_MAX_TOPICS_PER_NAMESPACE: String(CAP) }, config: { settledTopicSeconds: 1 } },
  { tmpDir: memoryTmpDir() },
);
const NS = makeNamespace(
  TEAM_A.owner_id as string,
  "prj_replays",
  TEAM_A.environment as string,
  DEPLOYMENT,
);
let app: WorkflowApp;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  await buildExampleApp("standalone", EXAMPLE_5_DIR);
  nc = await connect({ servers: fx.nats.url });
  jsm = await jetstreamManager(nc);
  app = await startWorkflowApp({
    appDir: EXAMPLE_5_DIR,
    tmpDir: memoryTmpDir(),
    gatewayUrl: fx.gateways[0]!.url,
    token: await fx.issuer.token({ project_id: "prj_replays" }),
    deploymentId: DEPLOYMENT,
    env: { WORKFLOW_SEQUENTIAL_REPLAYS: "1", VQS_WORKFLOW_MAX_CONCURRENCY: "1" },
  });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  await nc?.close();
});

/** The namespace's topics now (its streams). */
async function topicCount(): Promise<number> {
  let n = 0;
  for await (const name of jsm.streams.names(namespaceFilter("iad1", NS))) if (name) n++;
  return n;
}

/** The stream of a run's own topic: world-vercel's `<queue>_<runId>`, sanitized as it does. */
function runStream(workflow: string, runId: string): string {
  const topic = `__wkf_workflow_workflow//./workflows/example//${workflow}_${runId}`;
  return topicNames("iad1", { namespace: NS, topic: topic.replace(/[^A-Za-z0-9-_]/g, "-") }).stream;
}

/** The gateway's series that start with `prefix`: value by the rest of the name. */
const metrics = (prefix: string) => metricsByPrefix(fx.gateways[0]!.metricsUrl, prefix);

describe("Workflow DevKit 5.x with WORKFLOW_SEQUENTIAL_REPLAYS=1 on vqs", () => {
  it(`carries ${RUNS} runs, a topic each, through a namespace capped at ${CAP} topics`, async () => {
    const created = new Set<string>(); // topics' streams, from JetStream's advisories
    const advisories = nc.subscribe("$JS.EVENT.ADVISORY.STREAM.CREATED.>", {
      callback: (_err, m) => {
        // A topic's; not one of the gateway's own streams, which it may make meanwhile.
        const stream = m.subject.split(".").pop()!;
        if (/^VQS_[0-9a-f]{32}$/.test(stream)) created.add(stream);
      },
    });
    const began = Date.now();
    let started = 0;
    // The most topics the namespace had at once, and the steps run so far, looked at often.
    let peak = 0;
    let stepsRun = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        peak = Math.max(peak, await topicCount());
        stepsRun = await app.stepsRun();
        await sleep(100);
      }
    })().finally(() => (watching = false));

    const retried = await Promise.all(
      Array.from({ length: RETRIED }, (_, i) => app.start("retried", [`f${i}`])),
    );
    // A few starts at a time, each once fewer than WINDOW runs are still before their step.
    const singles: string[] = [];
    let progress = { steps: 0, at: Date.now() };
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (started < RUNS) {
          if (!watching) throw new Error("the watcher stopped");
          if (started - stepsRun >= WINDOW) {
            if (stepsRun > progress.steps) progress = { steps: stepsRun, at: Date.now() };
            if (Date.now() - progress.at > 60_000) {
              throw new Error(
                `no step ran for a minute: ${started} runs started, ${stepsRun} steps run, ` +
                  `${await topicCount()} topics\n${app.output().slice(-3000)}`,
              );
            }
            await sleep(20);
            continue;
          }
          const i = started++;
          singles[i] = await app.start("single", [`r${i}`, i]);
        }
      }),
    );
    const outputs = await Promise.all(
      [...retried, ...singles].map(async (id) => (await app.completed(id, 180_000)).output),
    );
    const ranMs = Date.now() - began;
    watching = false;
    await watcher;
    advisories.unsubscribe();

    expect(outputs).toEqual([...retried.map(() => 3), ...singles.map((_, i) => i + 1)]);
    // Each step ran once; the flaky one twice.
    const counts = await app.stepCounts();
    expect(counts.size).toBe(RUNS + 3 * RETRIED);
    for (let i = 0; i < RETRIED; i++) {
      expect(counts.get(`f${i} before`), `f${i}`).toBe(1);
      expect(counts.get(`f${i} flaky`), `f${i}`).toBe(2);
      expect(counts.get(`f${i} after`), `f${i}`).toBe(1);
    }
    for (let i = 0; i < RUNS; i++) expect(counts.get(`r${i} add`), `r${i}`).toBe(1);
    // One flow invocation per run (its steps inline), one more for a retry; every push 2xx.
    const pushes = await metrics("vqs_push_requests_total");
    expect(pushes.get('{outcome="success"}')).toBe(RUNS + 2 * RETRIED);
    expect([...pushes].filter(([k, n]) => k !== '{outcome="success"}' && n > 0)).toEqual([]);
    // Every request answered 2xx: no 403 topic_limit_reached, nor any other refusal.
    const requests = await metrics("vqs_http_request_duration_seconds_count");
    expect([...requests].filter(([k]) => !/status_code="2\d\d"/.test(k))).toEqual([]);
    expect(app.output()).not.toContain("topic_limit_reached");
    // A topic for each run, and one for each retried step: many more than the cap.
    for (const id of singles) expect(created.has(runStream("single", id)), id).toBe(true);
    for (const id of retried) expect(created.has(runStream("retried", id)), id).toBe(true);
    expect(created.size).toBe(RUNS + 2 * RETRIED);
    expect(peak).toBeLessThanOrEqual(CAP);
    // Settled and unused for a second: every one removed by the gateway's sweeps.
    const gone = await eventually(async () => (await topicCount()) === 0, 30_000);
    expect(gone, `${await topicCount()} topics left`).toBe(true);
    console.log(
      `${RUNS + RETRIED} runs in ${ranMs} ms, ${created.size} topics, ` + `at most ${peak} at once`,
    );
  }, 600_000);
});

// Workflow DevKit 5.x with WORKFLOW_SEQUENTIAL_REPLAYS=1: world-vercel sends each run's replays
// (and each inline step) to a topic of its own under `__wkf_workflow_*`. A small set of real runs
// (the 5.x World of examples/workflow-5 in @workflow/world-testing's own app server, flow pushes
// at maxConcurrency 1 as the builder declares in that mode) completes through a real gateway and
// nats-server, and every per-run topic is removed once settled (VQS_SETTLED_TOPIC_SECONDS=1).
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { controlPort, ROOT, SERVER, SUITE } from "../../helpers/world-testing.js";
import { sleep } from "../../helpers/http.js";
import { eventually } from "../../helpers/settings.js";

const fx = useGateways(1, { env: { VQS_SETTLED_TOPIC_SECONDS: "1" } });
let dir: string;
let server: ChildProcess;
let log = "";
let target: string;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "vqs-wf5-replays-"));
  nc = await connect({ servers: fx.nats.url });
  jsm = await jetstreamManager(nc);
  server = spawn(process.execPath, [SERVER], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? dir,
      WORKFLOW_TARGET_WORLD: "./examples/workflow-5/world.mjs",
      CONTROL_FD: "3",
      WORKFLOW_VERCEL_BACKEND_URL: fx.gateways[0]!.url,
      VQS_TOKEN: await fx.issuer.token({ project_id: "prj_replays" }),
      VERCEL_DEPLOYMENT_ID: "dpl_replays",
      WORKFLOW_LOCAL_DATA_DIR: join(dir, "data"),
      WORKFLOW_SEQUENTIAL_REPLAYS: "1",
      VQS_WORKFLOW_MAX_CONCURRENCY: "1",
      NODE_OPTIONS: `--import=${join(SUITE, "promise-with-resolvers.mjs")}`,
    },
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  server.stdout?.on("data", (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  server.stderr?.on("data", (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
  target = `http://127.0.0.1:${await controlPort(server)}`;
}, 60_000);

afterAll(async () => {
  server?.kill();
  await nc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The names of the region's topics (their streams' descriptions). */
async function topicNames(): Promise<string[]> {
  const out: string[] = [];
  for await (const info of jsm.streams.list()) {
    if (!/^VQS_[0-9a-f]{32}$/.test(info.config.name)) continue;
    const d = JSON.parse(info.config.description ?? "{}") as { topic?: string };
    if (d.topic) out.push(d.topic);
  }
  return out;
}

async function invoke(file: string, workflow: string, args: unknown[]): Promise<string> {
  const res = await fetch(`${target}/invoke`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ file, workflow, args }),
  });
  expect(res.status, log.slice(-2000)).toBe(200);
  return ((await res.json()) as { runId: string }).runId;
}

async function completed(runId: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const { status } = (await (await fetch(`${target}/runs/${runId}`)).json()) as {
      status: string;
    };
    if (status === "completed") return;
    if (status === "failed" || Date.now() > deadline) {
      throw new Error(`run ${runId} is ${status}\n${log.slice(-3000)}`);
    }
    await sleep(200);
  }
}

describe("Workflow DevKit 5.x with WORKFLOW_SEQUENTIAL_REPLAYS=1 on vqs", () => {
  it("completes a set of runs on per-run topics, and removes those topics once settled", async () => {
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const t of await topicNames()) seen.add(t);
        await sleep(150);
      }
    })();
    const file = "workflows/inline-execution.ts";
    const runIds = await Promise.all([
      ...Array.from({ length: 8 }, () => invoke(file, "sequentialStepsWorkflow", [3])),
      ...Array.from({ length: 2 }, () => invoke(file, "sleepWorkflow", [])),
    ]);
    await Promise.all(runIds.map(completed));
    watching = false;
    await watcher;

    // Each run had a topic of its own (the orchestrator's replays), under the pushed pattern.
    const perRun = [...seen].filter((t) => runIds.some((id) => t.includes(id)));
    for (const id of runIds) {
      expect(
        perRun.some((t) => t.startsWith("__wkf_workflow_") && t.endsWith(`_${id}`)),
        `a topic for ${id} among ${JSON.stringify([...seen])}`,
      ).toBe(true);
    }
    // Settled and unused for a second: removed by the gateway's sweeps.
    const gone = await eventually(async () => {
      const now = await topicNames();
      return !now.some((t) => runIds.some((id) => t.includes(id)));
    }, 30_000);
    expect(gone, `left: ${JSON.stringify(await topicNames())}`).toBe(true);
  }, 150_000);
});

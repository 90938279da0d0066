// The real Workflow DevKit on vqs: the example app (examples/workflow), built by Workflow's own
// builder, runs with the World shipped there (queue: world-vercel's createQueue() through
// /queues-proxy; storage: world-postgres on a throwaway PostgreSQL cluster), pushed to by a
// gateway process. Steps in sequence, a step that throws once and is retried, a workflow's sleep
// resuming on time, a 1.5 MB run input (above the 1 MiB inline limit: a large body), 100
// concurrent runs with every step run exactly once, a gateway restart in the middle of runs, a
// token that rotates under the running app, and a step longer than its push timeout running
// once. The app runs as two processes on one port, except the one with the short push timeout.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../src/dev/nats-server-process.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import {
  killGatewayProcesses,
  spawnGateway,
  type GatewayProcess,
} from "../../helpers/processes/gateway-process.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/processes/postgres.js";
import {
  buildExampleApp,
  migrateWorldPostgres,
  startWorkflowApp,
  type WorkflowApp,
} from "../../helpers/workflow-app.js";
import { scrape } from "../../helpers/metrics.js";
import { clockPast, eventually } from "../../helpers/wait.js";

let nats: TestNats;
let issuer: TestIssuer;
let pg: TestPostgres;
let gateway: GatewayProcess;
let port: number;
let app: WorkflowApp;

const startGateway = () =>
  spawnGateway(nats.url, issuer, {
    PORT: String(port),
    VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1:*",
  });

beforeAll(async () => {
  [nats, issuer, pg] = await Promise.all([startTestNats(), startIssuer(), startTestPostgres()]);
  port = await freePort();
  gateway = await startGateway();
  await buildExampleApp();
  migrateWorldPostgres(pg.url);
  app = await startWorkflowApp({
    gatewayUrl: gateway.url,
    token: await issuer.token(),
    deploymentId: "dpl_wf1",
    postgresUrl: pg.url,
    // A handler whose acknowledgement cannot reach a restarting gateway leaves its message
    // leased: it comes back when the lease ends (the push timeout + 2 s, at least 30 s), not
    // after the default timeout's 300 s.
    // Two processes on the app's port (node:cluster), as replicas behind a load balancer: every
    // test below runs across both.
    env: { VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS: "15", WORKFLOW_APP_PROCESSES: "2" },
  });
}, 240_000);

/** Bytes the gateway has streamed into the large-body store (its metric). */
async function largeBytesIn(): Promise<number> {
  const text = await scrape(gateway.metricsUrl);
  return Number(/^vqs_large_body_bytes_total\{direction="in"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * Whether every group of the deployment's topics has nothing left to deliver or acknowledge (the
 * gateway's per-group metrics), so that no message of it can be pushed again.
 */
async function deploymentSettled(deployment: string): Promise<boolean> {
  const text = await scrape(gateway.metricsUrl);
  const figures = text
    .split("\n")
    .filter(
      (l) =>
        /^vqs_consumer_(backlog|in_flight)_messages\{/.test(l) &&
        l.includes(`queue_namespace="`) &&
        l.includes(`/${deployment}"`),
    )
    .map((l) => Number(l.split(" ").pop()));
  return figures.length > 0 && figures.every((v) => v === 0);
}

/** When a JWT's `exp` says it expires (ms). */
function expiryOf(jwt: string): number {
  const payload = JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()) as {
    exp: number;
  };
  return payload.exp * 1000;
}

afterAll(async () => {
  await app?.stop();
  killGatewayProcesses();
  await Promise.all([pg?.dispose(), issuer?.close(), nats?.dispose()]);
});

describe("Workflow DevKit apps on vqs (world-vercel queue, world-postgres storage)", () => {
  it("runs steps in sequence, each once", async () => {
    const run = await app.completed(await app.start("sequence", ["seq", 4]));
    expect(run.output).toBe(1 + 2 + 3 + 4);
    const counts = await app.stepCounts();
    for (let i = 0; i < 4; i++) expect(counts.get(`seq add${i}`), `add${i}`).toBe(1);
  });

  it("retries a step that throws once", async () => {
    const run = await app.completed(await app.start("retried", ["retry"]));
    expect(run.output).toBe(3);
    const counts = await app.stepCounts();
    expect(counts.get("retry before")).toBe(1);
    expect(counts.get("retry flaky")).toBe(2);
    expect(counts.get("retry after")).toBe(1);
  });

  it("resumes after a workflow's sleep on time", async () => {
    const run = await app.completed(await app.start("sleeper", ["nap", 3]));
    const { before, after } = run.output as { before: number; after: number };
    // Not before its time; late by no more than a generous bound (a loaded machine).
    expect(after - before).toBeGreaterThanOrEqual(3000);
    expect(after - before).toBeLessThan(15_000);
  });

  it("takes a 1.5 MB run input (the run's first message carries it)", async () => {
    const text = "x".repeat(1_500_000);
    const storedBefore = await largeBytesIn();
    const run = await app.completed(await app.start("large", ["big", text]));
    expect(run.output).toBe(1_500_000);
    expect((await app.stepCounts()).get("big measure")).toBe(1);
    // It took the large-body path: the gateway streamed it into the body store.
    expect((await largeBytesIn()) - storedBefore).toBeGreaterThanOrEqual(1_500_000);
  });

  it("completes 100 concurrent runs, every step run exactly once", async () => {
    const ids = await Promise.all(
      Array.from({ length: 100 }, (_, i) => app.start("sequence", [`c${i}`, 3])),
    );
    const runs = await Promise.all(ids.map((id) => app.completed(id, 120_000)));
    expect(runs.every((r) => r.output === 6)).toBe(true);
    const counts = await app.stepCounts();
    const wrong: string[] = [];
    for (let i = 0; i < 100; i++) {
      for (let s = 0; s < 3; s++) {
        const n = counts.get(`c${i} add${s}`) ?? 0;
        if (n !== 1) wrong.push(`c${i} add${s}: ${n}`);
      }
    }
    expect(wrong).toEqual([]);
    // Pushed to both of the app's processes.
    expect((await app.stepProcesses("c")).size).toBe(2);
  }, 150_000);

  it("completes runs across a gateway restart", async () => {
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 ? app.start("sequence", [`r${i}`, 5]) : app.start("sleeper", [`r${i}`, 2]),
      ),
    );
    // Once the runs are under way, a graceful restart on the same address (what a rolling
    // update does to one gateway).
    const started = async () => [...(await app.stepCounts()).keys()].some((k) => k.startsWith("r"));
    expect(await eventually(started, 30_000, 100)).toBe(true);
    const exited = new Promise((r) => gateway.child.once("exit", r));
    gateway.child.kill("SIGTERM");
    await exited;
    gateway = await startGateway();
    const runs = await Promise.all(ids.map((id) => app.completed(id, 120_000)));
    expect(runs.map((r) => r.status)).toEqual(ids.map(() => "completed"));
    // Every step ran; a step whose completion was cut by the restart may run again
    // (at-least-once), which the workflow's event log makes harmless.
    const counts = await app.stepCounts();
    for (let i = 1; i < 20; i += 2) {
      for (let s = 0; s < 5; s++) expect(counts.get(`r${i} add${s}`)).toBeGreaterThanOrEqual(1);
    }
  }, 150_000);

  it("keeps running when its token is replaced (rotation)", async () => {
    // A token that expires soon, then a fresh one written to the token file: runs started
    // after the first expired still complete.
    const soon = await issuer.token({}, { expiresIn: "3s" });
    await app.setToken(soon);
    await app.completed(await app.start("sequence", ["rot1", 1]));
    await clockPast(expiryOf(soon)); // the first token has expired
    await app.setToken(await issuer.token());
    const run = await app.completed(await app.start("sequence", ["rot2", 2]));
    expect(run.output).toBe(3);
  }, 60_000);

  it("runs a step longer than its push timeout once", async () => {
    // push.timeoutSeconds 3 and a 12 s step: the handler keeps its lease (the client extends
    // it), so the step is not pushed again while it runs.
    const short = await startWorkflowApp({
      gatewayUrl: gateway.url,
      token: await issuer.token(),
      deploymentId: "dpl_wf_timeout",
      postgresUrl: pg.url,
      env: { VQS_WORKFLOW_PUSH_TIMEOUT_SECONDS: "3" },
    });
    try {
      const run = await short.completed(await short.start("slow", ["long", 12_000]), 90_000);
      expect(run.output).toBe(12_000);
      // Every message of the run acknowledged: none can be pushed again.
      expect(await eventually(() => deploymentSettled("dpl_wf_timeout"), 30_000, 200)).toBe(true);
      expect((await short.stepCounts()).get("long slow")).toBe(1);
    } finally {
      await short.stop();
    }
  }, 120_000);
});

// The README's quick path: the example Workflow DevKit app (examples/workflow) with the World
// shipped there on world-local 4.x storage (no WORKFLOW_POSTGRES_URL), pushed to by a gateway
// process over a real nats-server: a run that sleeps and a step that retries complete, and a
// push without a token of the app's queue is refused (401) by its verifier. And the
// same app on settings that only `vqs triggers sync` wrote (from the builder's Build Output API
// triggers), its World told not to store its own (VQS_WORKFLOW_STORE_SETTINGS=false).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../src/dev/nats-server-process.js";
import { runCli } from "../../helpers/cli.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import {
  killGatewayProcesses,
  spawnGateway,
  type GatewayProcess,
} from "../../helpers/processes/gateway-process.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { settingsApi } from "../../helpers/settings.js";
import {
  BUILD_OUTPUT_DIR,
  buildExampleApp,
  startWorkflowApp,
  type WorkflowApp,
} from "../../helpers/workflow-app.js";

let nats: TestNats;
let issuer: TestIssuer;
let gateway: GatewayProcess;
const apps: WorkflowApp[] = [];

beforeAll(async () => {
  [nats, issuer] = await Promise.all([startTestNats(), startIssuer()]);
  gateway = await spawnGateway(nats.url, issuer, { VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1:*" });
  await buildExampleApp();
}, 240_000);

afterAll(async () => {
  for (const app of apps) await app.stop();
  killGatewayProcesses();
  await Promise.all([issuer?.close(), nats?.dispose()]);
});

describe("Workflow DevKit apps on world-local storage (the README's quick path)", () => {
  it("completes a run that sleeps and one whose step throws once and is retried", async () => {
    const app = await startWorkflowApp({
      gatewayUrl: gateway.url,
      token: await issuer.token(),
      deploymentId: "dpl_local",
    });
    apps.push(app);
    const [slept, retried] = await Promise.all([
      app.start("sleeper", ["nap", 2]).then((id) => app.completed(id)),
      app.start("retried", ["retry"]).then((id) => app.completed(id)),
    ]);
    const { before, after } = slept.output as { before: number; after: number };
    expect(after - before).toBeGreaterThanOrEqual(2000);
    expect(retried.output).toBe(3);
    const counts = await app.stepCounts();
    expect(counts.get("retry flaky")).toBe(2);
    expect(counts.get("retry after")).toBe(1);
  }, 90_000);

  it("answers 401 to a push to its Workflow routes that carries no token of its queue", async () => {
    // The first test's app, or one of its own when run alone.
    let app = apps[0];
    if (!app) {
      app = await startWorkflowApp({
        gatewayUrl: gateway.url,
        token: await issuer.token(),
        deploymentId: "dpl_local",
      });
      apps.push(app);
    }
    const other = await issuer.token(); // a token, but not a push's
    for (const route of ["flow", "step"]) {
      for (const authorization of [undefined, `Bearer ${other}`]) {
        const res = await fetch(`${app.url}/.well-known/workflow/v1/${route}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "ce-type": "com.vercel.queue.v2beta",
            ...(authorization ? { authorization } : {}),
          },
          body: "{}",
        });
        expect(res.status, `${route} ${authorization ? "foreign" : "none"}`).toBe(401);
      }
    }
  });

  it("runs on settings that only `vqs triggers sync` wrote (VQS_WORKFLOW_STORE_SETTINGS=false)", async () => {
    await buildExampleApp("vercel-build-output-api");
    const token = await issuer.token();
    const deploymentId = "dpl_synced";
    const port = await freePort();
    const appUrl = `http://127.0.0.1:${port}`;
    const settings = settingsApi(gateway.url, token, { "vqs-deployment-id": deploymentId });
    const sync = await runCli(
      [
        "triggers",
        "sync",
        "--build-output",
        BUILD_OUTPUT_DIR,
        "--deployment-id",
        deploymentId,
        "--app-url",
        appUrl,
      ],
      { env: { VQS_URL: gateway.url, VQS_TOKEN: token } },
    );
    expect(sync.code, sync.stderr).toBe(0);
    const synced = await settings.list();
    expect(synced).toHaveLength(2);
    expect(JSON.stringify(synced)).toContain(`${appUrl}/.well-known/workflow/v1/flow`);

    const app = await startWorkflowApp({
      gatewayUrl: gateway.url,
      token,
      deploymentId,
      port,
      env: { VQS_WORKFLOW_STORE_SETTINGS: "false", VQS_WORKFLOW_MAX_CONCURRENCY: "7" },
    });
    apps.push(app);
    const run = await app.completed(await app.start("sequence", ["synced", 3]));
    expect(run.output).toBe(1 + 2 + 3);
    // The World's start() wrote nothing: the settings are still the ones sync wrote (a stored
    // document would say push.maxConcurrency 7).
    expect(await settings.list()).toEqual(synced);
  }, 240_000);
});

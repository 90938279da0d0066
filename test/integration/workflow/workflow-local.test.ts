// The README's quick path: the example Workflow DevKit app (examples/workflow) with the World
// shipped there on world-local 4.x storage (no WORKFLOW_POSTGRES_URL), pushed to by a gateway
// process over a real nats-server: a run that sleeps and a step that retries complete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import {
  killGatewayProcesses,
  spawnGateway,
  type GatewayProcess,
} from "../../helpers/processes/gateway-process.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { buildExampleApp, startWorkflowApp, type WorkflowApp } from "../../helpers/workflow-app.js";

let nats: TestNats;
let issuer: TestIssuer;
let gateway: GatewayProcess;
const apps: WorkflowApp[] = [];

beforeAll(async () => {
  [nats, issuer] = await Promise.all([startTestNats(), startIssuer()]);
  gateway = await spawnGateway(nats.url, issuer, { VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1" });
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
});

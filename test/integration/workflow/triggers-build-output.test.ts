// `vqs triggers sync` with the Build Output API: the example app built by Workflow's own builder
// (`workflow build --target vercel-build-output-api`, whose flow and step functions declare
// `experimentalTriggers` in their .vc-config.json), synced into a deployment's namespace with
// --dry-run first; a vercel.json trigger's `consumer` honoured; bad build outputs refused.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SettingsDocument } from "../../../src/cli/api-client.js";
import type { SyncResult } from "../../../src/cli/triggers/sync.js";
import { runCli, type CliRun } from "../../helpers/cli.js";
import { useGateways } from "../../helpers/fixture.js";
import { uniqueName } from "../../helpers/http.js";
import { settingsApi } from "../../helpers/settings.js";
import { BUILD_OUTPUT_DIR, buildExampleApp } from "../../helpers/workflow-app.js";

const APP_URL = "http://localhost:3000";
const fx = useGateways(1, { env: { VQS_PUSH_ALLOWED_URLS: APP_URL } });
let token: string;
let scratch: string;

beforeAll(async () => {
  token = await fx.issuer.token({ project_id: uniqueName("prj") });
  scratch = await mkdtemp(join(tmpdir(), "vqs-bo-"));
  await buildExampleApp("vercel-build-output-api");
}, 200_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function vqs(args: string[], cwd = scratch): Promise<CliRun> {
  return runCli(["triggers", "sync", "--app-url", APP_URL, ...args], {
    cwd,
    env: { VQS_URL: fx.gateways[0]!.url, VQS_TOKEN: token },
  });
}

const summary = (results: SyncResult[]) =>
  results.map((r) => `${r.action} ${r.topic} ${r.consumerGroup} ${r.url}`).sort();

describe("vqs triggers sync --build-output", () => {
  it("applies the Workflow builder's triggers in a deployment's namespace, dry run first", async () => {
    const dpl = uniqueName("dpl");
    const args = ["--build-output", BUILD_OUTPUT_DIR, "--deployment-id", dpl, "--json"];
    const expected = [
      `created __wkf_step_* default ${APP_URL}/.well-known/workflow/v1/step`,
      `created __wkf_workflow_* default ${APP_URL}/.well-known/workflow/v1/flow`,
    ];
    const settings = settingsApi(fx.gateways[0]!.url, token, { "vqs-deployment-id": dpl });

    const dry = await vqs([...args, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    const planned = JSON.parse(dry.stdout) as SyncResult[];
    expect(summary(planned)).toEqual(expected);
    expect(planned.every((r) => r.dryRun === true)).toBe(true);
    expect(planned[0]!.changes).toContainEqual({ field: "retry.afterSeconds", from: 60, to: 5 });
    expect(await settings.list()).toEqual([]);

    const real = await vqs(args);
    expect(real.code, real.stderr).toBe(0);
    expect(summary(JSON.parse(real.stdout) as SyncResult[])).toEqual(expected);
    const res = await settings.get("__wkf_workflow_*", "default");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as SettingsDocument;
    expect(doc.push?.url).toBe(`${APP_URL}/.well-known/workflow/v1/flow`);
    expect(doc.retry).toMatchObject({ afterSeconds: 5, initialDelaySeconds: 0 });
    // Nothing in the deploymentless namespace.
    expect(await settingsApi(fx.gateways[0]!.url, token).list()).toEqual([]);

    // Again: unchanged; the text report says what it did.
    const again = await vqs(args.filter((a) => a !== "--json"));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("2 unchanged");
  });

  it("honours a vercel.json trigger's consumer, next to a build output", async () => {
    const dir = join(scratch, "app");
    await mkdir(join(dir, "out/functions/api/jobs.func"), { recursive: true });
    await writeFile(
      join(dir, "vercel.json"),
      JSON.stringify({
        functions: {
          "api/orders.mjs": {
            experimentalTriggers: [
              { type: "queue/v2beta", topic: "orders", consumer: "billing", retryAfterSeconds: 7 },
            ],
          },
        },
      }),
    );
    await writeFile(
      join(dir, "out/functions/api/jobs.func/.vc-config.json"),
      JSON.stringify({
        runtime: "nodejs22.x",
        experimentalTriggers: [{ type: "queue/v2beta", topic: "jobs_*" }],
      }),
    );
    const dpl = uniqueName("dpl");
    const r = await vqs(["--build-output", "out", "--deployment-id", dpl, "--json"], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(summary(JSON.parse(r.stdout) as SyncResult[])).toEqual([
      `created jobs_* functions_Sapi_Sjobs_Dfunc ${APP_URL}/api/jobs`,
      `created orders billing ${APP_URL}/api/orders`,
    ]);
    const settings = settingsApi(fx.gateways[0]!.url, token, { "vqs-deployment-id": dpl });
    const doc = (await (await settings.get("orders", "billing")).json()) as SettingsDocument;
    expect(doc.retry.afterSeconds).toBe(7);
  });

  it("refuses a missing or malformed build output, naming it", async () => {
    const missing = await vqs(["--build-output", "nowhere"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("cannot read nowhere: it has no functions/ folder");

    const none = await vqs([]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain("found neither vercel.json nor .vercel/output/functions");

    const dir = join(scratch, "bad");
    await mkdir(join(dir, ".vercel/output/functions/flow.func"), { recursive: true });
    await writeFile(join(dir, ".vercel/output/functions/flow.func/.vc-config.json"), "{");
    const bad = await vqs([], dir);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      ".vercel/output/functions/flow.func/.vc-config.json is not valid JSON",
    );

    await writeFile(
      join(dir, ".vercel/output/functions/flow.func/.vc-config.json"),
      JSON.stringify({ experimentalTriggers: [{ type: "queue/v2beta", topic: "t", consumer: 5 }] }),
    );
    const consumer = await vqs([], dir);
    expect(consumer.code).not.toBe(0);
    expect(consumer.stderr).toContain(
      "experimentalTriggers[0].consumer must be a consumer group name",
    );
  });
});

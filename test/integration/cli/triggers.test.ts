// `vqs triggers sync` and `vqs token`, run as a user runs them (spawned processes) against real
// gateways: a sample app's vercel.json (app router, pages router, plain api/, a wildcard)
// synced, checked through the API, synced again (unchanged), changed and pruned, dry-run, bad
// inputs and their exit codes. The consumer group names are held equal to the ones the real
// client's dev mode uses for the same vercel.json (a dev-mode process of the sample app, whose
// handlers record the group they were invoked for).
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SettingsDocument } from "../../../src/cli/api-client.js";
import type { SyncResult } from "../../../src/cli/triggers/sync.js";
import { loadConfig } from "../../../src/config.js";
import { DEV_AUDIENCE, DEV_ISSUER, devIssuer } from "../../../src/dev/dev-issuer.js";
import { freePort } from "../../../src/dev/nats-server-process.js";
import { createGateway } from "../../../src/gateway.js";
import { createLogger } from "../../../src/logger.js";
import { QueueClient } from "@vercel/queue";
import { runCli, type CliRun } from "../../helpers/cli.js";
import { useGateways } from "../../helpers/fixture.js";
import { RECEIPT_SECRET } from "../../helpers/gateway.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { startPushApp } from "../../helpers/push-app.js";
import { eventually, settingsApi } from "../../helpers/settings.js";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const APP_URL = "http://localhost:3000";
// Pushes may go to the sample app's URL and to the push test app (127.0.0.1, any port).
const fx = useGateways(1, {
  env: { VQS_PUSH_ALLOWED_URLS: "http://localhost:3000,http://127.0.0.1:*" },
});

/**
 * The sample app: route files that call handleCallback, as a real app's do. (No `[id]` folder:
 * the client's dev mode cannot register a handler whose path its file URL percent-encodes;
 * the unit test compares names of such paths with the client's function itself.)
 */
const FILES = {
  orders: "app/api/orders/route.mjs",
  jobs: "src/app/(shop)/api/my_jobs.v2/route.mjs",
  billing: "pages/api/billing/index.mjs",
  steps: "api/steps.mjs",
} as const;

function vercelJson(over: { drop?: string; ordersRetry?: number } = {}) {
  const functions: Record<string, unknown> = {
    [FILES.orders]: {
      maxDuration: 60,
      experimentalTriggers: [
        {
          type: "queue/v2beta",
          topic: "orders",
          retryAfterSeconds: over.ordersRetry ?? 30,
          maxConcurrency: 5,
        },
      ],
    },
    [FILES.jobs]: {
      experimentalTriggers: [{ type: "queue/v2beta", topic: "jobs", initialDelaySeconds: 10 }],
    },
    [FILES.billing]: { experimentalTriggers: [{ type: "queue/v2beta", topic: "orders" }] },
    [FILES.steps]: { experimentalTriggers: [{ type: "queue/v2beta", topic: "__wkf_step_*" }] },
    "api/other.mjs": { memory: 1024 },
  };
  if (over.drop) delete functions[over.drop];
  return JSON.stringify({ functions }, null, 2);
}

const ROUTE_FILE = `
import { QueueClient } from "@vercel/queue";
const client = new QueueClient({
  region: "iad1",
  token: process.env.VQS_TOKEN,
  resolveBaseUrl: () => new URL(process.env.VQS_URL),
});
export const POST = client.handleCallback(async (_payload, meta) => {
  globalThis.__seen.push({ file: import.meta.url, topic: meta.topicName, consumerGroup: meta.consumerGroup, messageId: meta.messageId });
});
`;

/** Sends one message per topic in the client's dev mode and reports which groups handled it. */
const DEV_RUNNER = `
import { QueueClient } from "@vercel/queue";
globalThis.__seen = [];
const client = new QueueClient({
  region: "iad1",
  token: process.env.VQS_TOKEN,
  resolveBaseUrl: () => new URL(process.env.VQS_URL),
});
const [topics, expected] = JSON.parse(process.argv[2]);
for (const t of topics) await client.send(t, { t });
const until = Date.now() + 20000;
while (globalThis.__seen.length < expected && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
process.stdout.write("SEEN " + JSON.stringify(globalThis.__seen) + "\\n");
process.exit(0);
`;

let app: string;
let token: string;

beforeAll(async () => {
  app = await mkdtemp(join(tmpdir(), "vqs-cli-app-"));
  // The app's own node_modules would hold @vercel/queue: the repository's does.
  await symlink(join(ROOT, "node_modules"), join(app, "node_modules"), "dir");
  for (const file of Object.values(FILES)) {
    await mkdir(dirname(join(app, file)), { recursive: true });
    await writeFile(join(app, file), ROUTE_FILE);
  }
  await writeFile(join(app, "dev-runner.mjs"), DEV_RUNNER);
  await writeFile(join(app, "vercel.json"), vercelJson());
  // A namespace of our own: nothing else in it for --prune to find.
  token = await fx.issuer.token({ project_id: uniqueName("prj") });
});

afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
});

/** `vqs <args>` against the fixture's gateway, in the sample app's directory. */
function vqs(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {
    cwd: app,
    env: { VQS_URL: fx.gateways[0]!.url, VQS_TOKEN: token, ...env },
  });
}

async function syncJson(args: string[], deploymentId: string): Promise<SyncResult[]> {
  const r = await vqs([
    "triggers",
    "sync",
    "--app-url",
    APP_URL,
    "--json",
    "--deployment-id",
    deploymentId,
    ...args,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as SyncResult[];
}

const summary = (results: SyncResult[]) =>
  results.map((r) => `${r.action} ${r.topic} ${r.consumerGroup}`).sort();

const GROUPS = {
  orders: "app_Sapi_Sorders_Sroute_Dmjs",
  jobs: "src_Sapp_S_28shop_29_Sapi_Smy__jobs_Dv2_Sroute_Dmjs",
  billing: "pages_Sapi_Sbilling_Sindex_Dmjs",
  steps: "api_Ssteps_Dmjs",
};

describe("vqs triggers sync", () => {
  it("stores each trigger as push settings, and a second run changes nothing", async () => {
    const dpl = uniqueName("dpl");
    const settings = settingsApi(fx.gateways[0]!.url, token, { "vqs-deployment-id": dpl });
    const first = await syncJson([], dpl);
    expect(summary(first)).toEqual(
      [
        `created orders ${GROUPS.orders}`,
        `created jobs ${GROUPS.jobs}`,
        `created orders ${GROUPS.billing}`,
        `created __wkf_step_* ${GROUPS.steps}`,
      ].sort(),
    );
    const get = async (topic: string, group: string) => {
      const res = await settings.get(topic, group);
      expect(res.status, `${topic}/${group}`).toBe(200);
      return (await res.json()) as SettingsDocument;
    };
    const orders = await get("orders", GROUPS.orders);
    expect(orders.push).toEqual({
      url: `${APP_URL}/api/orders`,
      maxConcurrency: 5,
      timeoutSeconds: 300,
      autoAck: false,
    });
    expect(orders.retry).toEqual({
      afterSeconds: 30,
      initialDelaySeconds: 0,
      maxBackoffSeconds: 3600,
    });
    const jobs = await get("jobs", GROUPS.jobs);
    expect(jobs.push?.url).toBe(`${APP_URL}/api/my_jobs.v2`);
    expect(jobs.push?.maxConcurrency).toBe(10);
    expect(jobs.retry.initialDelaySeconds).toBe(10);
    expect((await get("orders", GROUPS.billing)).push?.url).toBe(`${APP_URL}/api/billing`);
    expect((await get("__wkf_step_*", GROUPS.steps)).push?.url).toBe(`${APP_URL}/api/steps`);
    const listed = await settings.list();
    expect(listed.map((d) => `${String(d.topic)} ${String(d.consumerGroup)}`).sort()).toEqual(
      [
        `__wkf_step_* ${GROUPS.steps}`,
        `jobs ${GROUPS.jobs}`,
        `orders ${GROUPS.orders}`,
        `orders ${GROUPS.billing}`,
      ].sort(),
    );
    // The deploymentless namespace got nothing.
    expect(await settingsApi(fx.gateways[0]!.url, token).list()).toEqual([]);

    const second = await syncJson([], dpl);
    expect(second.every((r) => r.action === "unchanged")).toBe(true);
    expect((await get("orders", GROUPS.orders)).updatedAt).toBe(orders.updatedAt);
  });

  it("names each group as the client's own dev mode does for the same vercel.json", async () => {
    const results = await syncJson(["--dry-run"], uniqueName("dpl"));
    const runner = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: "development", // the client's dev mode (and no VERCEL_DEPLOYMENT_ID)
        VQS_URL: fx.gateways[0]!.url,
        VQS_TOKEN: token,
      };
      const child = spawn(
        process.execPath,
        ["dev-runner.mjs", JSON.stringify([["orders", "jobs", "__wkf_step_x"], 4])],
        { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.stderr.on("data", (c: Buffer) => (out += c.toString()));
      child.once("close", (code) => resolve({ code, out }));
    });
    expect(runner.code, runner.out).toBe(0);
    const seen = JSON.parse(/^SEEN (.*)$/m.exec(runner.out)?.[1] ?? "[]") as {
      file: string;
      topic: string;
      consumerGroup: string;
      messageId: string;
    }[];
    const byFile = (results: { file: string | null; consumerGroup: string }[]) =>
      Object.fromEntries(results.map((r) => [r.file ?? "", r.consumerGroup])) as Record<
        string,
        string
      >;
    // The client's handlers ran for every trigger, each for the group the tool named.
    const clientGroups = byFile(
      seen.map((s) => ({
        file: Object.values(FILES).find((f) => decodeURI(s.file).endsWith(f)) ?? s.file,
        consumerGroup: s.consumerGroup,
      })),
    );
    expect(clientGroups, runner.out).toEqual(byFile(results));
    // And on the wire: the gateway holds each message acknowledged in exactly that group.
    const q = api(fx.gateways[0]!.url, token);
    for (const s of seen) {
      const res = await q.receiveById(s.topic, s.consumerGroup, s.messageId);
      expect(res.status, `${s.topic}/${s.consumerGroup}`).toBe(410);
    }
  });

  it("--dry-run changes nothing; --prune updates what changed and removes what is gone", async () => {
    const dpl = uniqueName("dpl");
    const settings = settingsApi(fx.gateways[0]!.url, token, { "vqs-deployment-id": dpl });
    await syncJson([], dpl);
    // An operator's own settings: a dead-letter-only document (never pruned), a pushed group
    // with dead letters that no trigger declares (push removed, dead letters kept), and a
    // timeout on a declared group (kept across syncs).
    const put = async (topic: string, group: string, body: unknown) =>
      expect((await settings.put(topic, group, body)).status).toBe(200);
    await put("orders", "audit", { deadLetter: { topic: "orders-dead", maxDeliveries: 3 } });
    await put("orders", "legacy", {
      push: { url: `${APP_URL}/legacy` },
      deadLetter: { topic: "orders-dead", maxDeliveries: 5 },
    });
    await put("orders", GROUPS.billing, {
      push: { url: `${APP_URL}/api/billing`, timeoutSeconds: 20 },
    });
    const before = await settings.list();

    await writeFile(join(app, "changed.json"), vercelJson({ drop: FILES.steps, ordersRetry: 45 }));
    const planned = await syncJson(["--vercel-json", "changed.json", "--prune", "--dry-run"], dpl);
    expect(planned.every((r) => r.dryRun === true)).toBe(true);
    expect(await settings.list()).toEqual(before);

    const results = await syncJson(["--vercel-json", "changed.json", "--prune"], dpl);
    expect(summary(results)).toEqual(summary(planned));
    expect(summary(results)).toEqual(
      [
        `updated orders ${GROUPS.orders}`,
        `unchanged jobs ${GROUPS.jobs}`,
        `unchanged orders ${GROUPS.billing}`,
        `pruned __wkf_step_* ${GROUPS.steps}`,
        `pruned orders legacy`,
      ].sort(),
    );
    const updated = results.find((r) => r.consumerGroup === GROUPS.orders)!;
    expect(updated.changes).toEqual([{ field: "retry.afterSeconds", from: 30, to: 45 }]);

    expect((await settings.get("__wkf_step_*", GROUPS.steps)).status).toBe(404);
    const legacy = (await (await settings.get("orders", "legacy")).json()) as SettingsDocument;
    expect(legacy.push).toBeNull();
    expect(legacy.deadLetter).toEqual({ topic: "orders-dead", maxDeliveries: 5 });
    const audit = (await (await settings.get("orders", "audit")).json()) as SettingsDocument;
    expect(audit.deadLetter).toEqual({ topic: "orders-dead", maxDeliveries: 3 });
    expect(audit.updatedAt).toBe(before.find((d) => d.consumerGroup === "audit")?.updatedAt);
    const billing = (await (
      await settings.get("orders", GROUPS.billing)
    ).json()) as SettingsDocument;
    expect(billing.push?.timeoutSeconds).toBe(20);
    const orders = (await (await settings.get("orders", GROUPS.orders)).json()) as SettingsDocument;
    expect(orders.retry.afterSeconds).toBe(45);

    // Pruned already: a second run has nothing left to prune.
    const again = await syncJson(["--vercel-json", "changed.json", "--prune"], dpl);
    expect(again.every((r) => r.action === "unchanged")).toBe(true);
  });

  it("syncs a trigger's flowControl: planned, stored, changed, kept when left out, removed by null, kept by prune; a bad one refused", async () => {
    const dpl = uniqueName("dpl");
    const settings = settingsApi(fx.gateways[0]!.url, token, { "vqs-deployment-id": dpl });
    const file = (flowControl?: unknown, topic = "orders") =>
      writeFile(
        join(app, "flow.json"),
        JSON.stringify({
          functions: {
            [FILES.orders]: {
              experimentalTriggers: [
                {
                  type: "queue/v2beta",
                  topic,
                  ...(flowControl !== undefined ? { flowControl } : {}),
                },
              ],
            },
          },
        }),
      );
    const sync = (...args: string[]) => syncJson(["--vercel-json", "flow.json", ...args], dpl);
    const stored = async () => {
      const res = await settings.get("orders", GROUPS.orders);
      return res.status === 404 ? null : ((await res.json()) as SettingsDocument);
    };

    await file({ key: "Tenant", concurrency: 2 });
    const planned = await sync("--dry-run");
    expect(planned.map((r) => [r.action, r.changes])).toEqual([
      [
        "created",
        [
          { field: "push.url", to: `${APP_URL}/api/orders` },
          { field: "flowControl.key", to: "tenant" },
          { field: "flowControl.concurrency", to: 2 },
        ],
      ],
    ]);
    expect(await settings.list()).toEqual([]);
    expect((await sync()).map((r) => r.action)).toEqual(["created"]);
    expect((await stored())?.flowControl).toEqual({
      key: "tenant",
      concurrency: 2,
      rate: null,
      ordered: false,
    });
    expect((await sync()).map((r) => r.action)).toEqual(["unchanged"]);

    await file({ key: "tenant", concurrency: 2, rate: { limit: 10, periodSeconds: 60 } });
    const rated = await sync();
    expect(rated.map((r) => [r.action, r.changes])).toEqual([
      [
        "updated",
        [
          { field: "flowControl.rate.limit", to: 10 },
          { field: "flowControl.rate.periodSeconds", to: 60 },
          { field: "flowControl.rate.burst", to: 10 },
        ],
      ],
    ]);
    expect((await stored())?.flowControl?.rate).toEqual({
      limit: 10,
      periodSeconds: 60,
      burst: 10,
    });

    // A bad value: refused as the settings API refuses it, before anything is sent.
    const bad = { key: "tenant", ordered: true, concurrency: 2 };
    const refused = await settings.put("orders", "probe", { flowControl: bad });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_settings");
    await file(bad);
    const before = await stored();
    const r = await vqs([
      "triggers",
      "sync",
      "--vercel-json",
      "flow.json",
      "--app-url",
      APP_URL,
      "--deployment-id",
      dpl,
      "--json",
    ]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toEqual({
      error: {
        code: "invalid_vercel_json",
        message: `flow.json: functions[${JSON.stringify(FILES.orders)}].experimentalTriggers[0]: ${error.message}`,
      },
    });
    expect(await stored()).toEqual(before);

    // Left out of the trigger (as a framework's generated triggers leave it): it stays.
    await file();
    const kept = await sync();
    expect(kept.map((x) => x.action)).toEqual(["unchanged"]);
    expect((await stored())?.flowControl?.rate?.limit).toBe(10);
    // Declared null: the group's limits go.
    await file(null);
    const removed = await sync();
    expect(removed.map((x) => [x.action, x.changes])).toEqual([
      ["updated", [{ field: "flowControl.key", from: "tenant" }]],
    ]);
    expect((await stored())?.flowControl).toBeNull();

    // --prune takes push only: flowControl and an operator's dead letters stay.
    await file({ key: "tenant", ordered: true });
    await sync();
    expect(
      (
        await settings.put("orders", GROUPS.orders, {
          ...(await stored()),
          topic: undefined,
          consumerGroup: undefined,
          updatedAt: undefined,
          deadLetter: { topic: "orders-dead", maxDeliveries: 3 },
        })
      ).status,
    ).toBe(200);
    await file(undefined, "other-topic");
    const pruned = await sync("--prune");
    expect(
      pruned.filter((x) => x.action === "pruned").map((x) => [x.consumerGroup, x.changes]),
    ).toEqual([[GROUPS.orders, [{ field: "push.url", from: `${APP_URL}/api/orders` }]]]);
    const left = await stored();
    expect(left).toMatchObject({
      push: null,
      flowControl: { key: "tenant", ordered: true },
      deadLetter: { topic: "orders-dead", maxDeliveries: 3 },
    });
  });

  it("prints a table by default: action, topic, group, URL, changes", async () => {
    const r = await vqs([
      "triggers",
      "sync",
      "--app-url",
      APP_URL,
      "--deployment-id",
      uniqueName("dpl"),
      "--dry-run",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ACTION\s+TOPIC\s+GROUP\s+URL\s+CHANGES$/);
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^created\\s+orders\\s+${GROUPS.orders}\\s+${APP_URL}/api/orders\\s+push\\.url=`,
        ),
      ),
    );
    expect(lines.at(-1)).toBe("4 created (dry run: nothing was changed)");
    expect(r.stdout).not.toContain("\x1b["); // no colour when not on a terminal
  });

  it("shows the API's refusal per entry and exits 1 after trying every entry", async () => {
    const r = await vqs([
      "triggers",
      "sync",
      "--app-url",
      "http://localhost:4000", // the gateway allows http://localhost:3000 only
      "--json",
      "--deployment-id",
      uniqueName("dpl"),
    ]);
    expect(r.code).toBe(1);
    const results = JSON.parse(r.stdout) as SyncResult[];
    expect(results).toHaveLength(4);
    for (const result of results) {
      expect(result.action).toBe("failed");
      expect(result.error?.code).toBe("push_destination_not_allowed");
      expect(result.error?.status).toBe(403);
    }
    const table = await vqs(["triggers", "sync", "--app-url", "http://localhost:4000"]);
    expect(table.code).toBe(1);
    expect(table.stdout).toContain("push_destination_not_allowed (HTTP 403)");
    expect(table.stderr).toContain("4 of 4 entries failed");
  });

  it("exit codes: unreadable file 3, invalid JSON 2, unknown flag 2, unreachable server 3, bad token 1", async () => {
    const sync = ["triggers", "sync", "--app-url", APP_URL];
    const missing = await vqs([...sync, "--vercel-json", "missing.json"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("cannot read missing.json: ENOENT");

    await writeFile(join(app, "broken.json"), "{ functions: ");
    const broken = await vqs([...sync, "--vercel-json", "broken.json"]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("broken.json is not valid JSON");

    const unknown = await vqs([...sync, "--frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");

    const port = await freePort(); // nobody listens there
    const unreachable = await vqs([...sync, "--json"], { VQS_URL: `http://127.0.0.1:${port}` });
    expect(unreachable.code).toBe(3);
    expect(JSON.parse(unreachable.stderr)).toEqual({
      error: { code: "unreachable", message: expect.stringContaining("ECONNREFUSED") as string },
    });

    const badToken = await vqs(sync, { VQS_TOKEN: "not-a-token" });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain("invalid_token (HTTP 401)");

    await writeFile(
      join(app, "unroutable.json"),
      JSON.stringify({
        functions: {
          "lib/queue.mjs": { experimentalTriggers: [{ type: "queue/v2beta", topic: "t" }] },
        },
      }),
    );
    const unroutable = await vqs([...sync, "--vercel-json", "unroutable.json"]);
    expect(unroutable.code).toBe(2);
    expect(unroutable.stderr).toContain('pass --route "lib/queue.mjs=/its/path"');
  });

  it("--help of every command exits 0 with an example", async () => {
    for (const path of [[], ["triggers"], ["triggers", "sync"], ["token"]]) {
      const r = await runCli([...path, "--help"]);
      expect(r.code, path.join(" ")).toBe(0);
      expect(r.stdout).toMatch(/\nExamples?:\n/);
    }
  });
});

describe("push delivery after a sync (the pusher, #11)", () => {
  it("a message published to a synced topic or pattern reaches the app's route", async () => {
    // A namespace of its own, deploymentless, as the client in the app uses it.
    const appToken = await fx.issuer.token({ project_id: uniqueName("prj") });
    const pushApp = await startPushApp(fx.gateways[0]!.url, appToken);
    try {
      const got: { route: string; topic: string; group: string; payload: unknown }[] = [];
      for (const route of ["orders", "steps"]) {
        pushApp.fetchRoute(route, {
          handler: (payload, meta) =>
            void got.push({ route, topic: meta.topicName, group: meta.consumerGroup, payload }),
        });
      }
      // App router files whose derived routes are the push app's /fetch/<name> routes.
      const topic = uniqueName("e2e-orders");
      const prefix = `${uniqueName("e2e_step")}_`;
      await writeFile(
        join(app, "e2e.json"),
        JSON.stringify({
          functions: {
            "app/fetch/orders/route.ts": {
              experimentalTriggers: [{ type: "queue/v2beta", topic }],
            },
            "app/fetch/steps/route.ts": {
              experimentalTriggers: [{ type: "queue/v2beta", topic: `${prefix}*` }],
            },
          },
        }),
      );
      const r = await vqs(
        ["triggers", "sync", "--vercel-json", "e2e.json", "--app-url", pushApp.url, "--json"],
        { VQS_TOKEN: appToken },
      );
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as SyncResult[]).map((x) => [x.action, x.url])).toEqual([
        ["created", `${pushApp.url}/fetch/orders`],
        ["created", `${pushApp.url}/fetch/steps`],
      ]);

      const client = new QueueClient({
        region: "iad1",
        token: appToken,
        deploymentId: null,
        resolveBaseUrl: () => new URL(fx.gateways[0]!.url),
      });
      await client.send(topic, { n: 1 });
      await client.send(`${prefix}1`, { n: 2 });
      expect(await eventually(() => got.length >= 2, 20_000), JSON.stringify(got)).toBe(true);
      expect(got.sort((a, b) => a.route.localeCompare(b.route))).toEqual([
        { route: "orders", topic, group: "app_Sfetch_Sorders_Sroute_Dts", payload: { n: 1 } },
        {
          route: "steps",
          topic: `${prefix}1`,
          group: "app_Sfetch_Ssteps_Sroute_Dts",
          payload: { n: 2 },
        },
      ]);
    } finally {
      await pushApp.close();
    }
  });
});

describe("vqs token", () => {
  it("prints a token that a gateway trusting the development key accepts", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "vqs-cli-token-"));
    const config = loadConfig({
      NATS_URL: fx.nats.url,
      VQS_REGION: "iad1",
      VQS_RECEIPT_SECRET: RECEIPT_SECRET,
      LOG_LEVEL: "silent",
    });
    let gateway: Awaited<ReturnType<typeof createGateway>> | null = null;
    try {
      const printed = await runCli(["token", "--data-dir", dataDir, "--team", "team_cli"]);
      expect(printed.code, printed.stderr).toBe(0);
      // The key the token was signed with, as `npm start` loads it.
      const dev = await devIssuer(dataDir);
      gateway = await createGateway({
        config,
        logger: createLogger("silent"),
        natsServers: [fx.nats.url],
        keys: dev.keys,
        issuers: [DEV_ISSUER],
        audiences: [DEV_AUDIENCE],
      });
      const url = await gateway.app.listen({ port: 0, host: "127.0.0.1" });
      const q = api(url, printed.stdout.trim());
      expect((await q.publish(uniqueName("tok"), "hi")).status).toBe(201);
      // `npm run token` runs the same code.
      const npmToken = await new Promise<string>((resolve) => {
        const tsx = join(ROOT, "node_modules", ".bin", "tsx");
        const child = spawn(tsx, ["scripts/token.ts", "--data-dir", dataDir], {
          cwd: ROOT,
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        child.stdout.on("data", (c: Buffer) => (out += c.toString()));
        child.once("close", () => resolve(out.trim()));
      });
      expect((await api(url, npmToken).publish(uniqueName("tok"), "hi")).status).toBe(201);
      // A token of another key is refused by the same gateway.
      expect(await errorCode(await api(url, await fx.issuer.token()).publish("x", "y"))).toBe(
        "invalid_token",
      );
    } finally {
      await gateway?.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

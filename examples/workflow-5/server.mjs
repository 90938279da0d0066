// The 5.x example app's server: the bundles that `workflow build --target standalone` wrote
// (.well-known/workflow/v1/flow.mjs; in 5.x steps run inline in the flow route) served at the
// flow route, which vqs pushes to, plus two routes for people and tests: POST /start/<workflow>
// (body: a JSON array of arguments) starts a run, GET /runs/<runId> shows its status and result.
// The World is this folder's (world.mjs), created once the port is known (its settings name the
// app's URL) and installed before the bundle loads: it takes its queue handler from it when
// loaded. One process (examples/workflow/server.mjs runs several for the 4.x app).
// Node 20 lacks Promise.withResolvers, which the 5.x runtime calls: first, the polyfill.
import "./peer-suite/promise-with-resolvers.mjs";
import { setWorld } from "@workflow/core/runtime";
import { getRun, start } from "workflow/api";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { verifiedRoute } from "../workflow/push-verify.mjs";
import { settingsFromEnv, tokenSource } from "../workflow/vqs-queue.mjs";
import { createWorld } from "./world.mjs";

const DIR = join(process.env.WORKFLOW_APP_DIR ?? import.meta.dirname, ".well-known/workflow/v1");
/** Workflow name -> its manifest entry (the builder's, as `start()` takes it). */
const workflows = new Map();
/** The flow route's handler; null until the World is installed (503 until then). */
let flow = null;

async function load(appUrl) {
  const manifest = JSON.parse(readFileSync(join(DIR, "manifest.json"), "utf8"));
  for (const byName of Object.values(manifest.workflows)) {
    for (const [name, w] of Object.entries(byName)) workflows.set(name, w);
  }
  const settings = settingsFromEnv();
  // Only verified pushes reach the flow route (401 otherwise: ../workflow/push-verify.mjs).
  flow = verifiedRoute((await import(pathToFileURL(join(DIR, "flow.mjs")).href)).POST, {
    settings,
    token: tokenSource(settings)(),
    appUrl,
    route: "/.well-known/workflow/v1/flow",
  });
}

function json(res, status, value) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

async function handle(req, res, body) {
  const path = (req.url ?? "/").split("?")[0];
  if (!flow) return json(res, 503, { error: "starting" });
  if (path === "/.well-known/workflow/v1/flow" && req.method === "POST") {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === "string") headers.set(k, v);
    }
    const answer = await flow(
      new Request(`http://app${req.url}`, { method: "POST", headers, body }),
    );
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
    return;
  }
  let m = /^\/start\/([A-Za-z0-9_]+)$/.exec(path);
  if (m && req.method === "POST") {
    const workflow = workflows.get(m[1]);
    if (!workflow) return json(res, 404, { error: `no workflow named ${m[1]}` });
    const args = body.length ? JSON.parse(body.toString()) : [];
    if (!Array.isArray(args)) return json(res, 400, { error: "the body must be a JSON array" });
    const run = await start(workflow, args);
    return json(res, 201, { runId: run.runId });
  }
  m = /^\/runs\/(wrun_[A-Za-z0-9]+)$/.exec(path);
  if (m && req.method === "GET") {
    const run = getRun(m[1]);
    const status = await run.status;
    return json(res, 200, {
      runId: m[1],
      status,
      ...(status === "completed" ? { output: await run.returnValue } : {}),
    });
  }
  if (path === "/healthz") return json(res, 200, { ok: true });
  json(res, 404, { error: "not found" });
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    handle(req, res, Buffer.concat(chunks)).catch((err) => {
      console.error(err);
      if (!res.headersSent) json(res, 500, { error: String(err?.message ?? err) });
      else res.end();
    });
  });
});

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? "127.0.0.1", async () => {
  const { port } = server.address();
  const appUrl = process.env.VQS_WORKFLOW_APP_URL ?? `http://127.0.0.1:${port}`;
  const world = createWorld({ appUrl });
  setWorld(world);
  await load(appUrl);
  await world.start();
  // One line the tests (and people) read: where the app listens.
  console.log(JSON.stringify({ listening: appUrl }));
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections(); // the gateway keeps its push connections open
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

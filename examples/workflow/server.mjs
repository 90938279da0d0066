// The example app's server: the Workflow bundles that `workflow build --target standalone`
// wrote (.well-known/workflow/v1/flow.js and step.js) served at their routes, which vqs pushes
// to, plus two routes for people and tests: POST /start/<workflow> (body: a JSON array of
// arguments) starts a run, GET /runs/<runId> shows its status and result. The World is this
// folder's (world.mjs), created once the port is known (its settings name the app's URL) and
// installed before the bundles load: they take their queue handlers from it when loaded. A push
// to the flow or step route is answered 401 unless its JWT verifies (push-verify.mjs); under
// another World (WORKFLOW_TARGET_WORLD, the benchmark's world-postgres) the routes are that
// World's own, posted by its queue without a vqs token, and are not wrapped.
// WORKFLOW_APP_PROCESSES=N (default 1) runs N such processes on the one port (node:cluster hands
// connections out in turn), as replicas behind a load balancer would be: a Node process runs
// its handlers on one thread, and a busy app needs more than one core.
import cluster from "node:cluster";
import { getWorld, setWorld } from "@workflow/core/runtime";
import { getRun, start } from "workflow/api";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { verifiedRoute } from "./push-verify.mjs";
import { createWorld, settingsFromEnv, tokenSource } from "./world.mjs";

const DIR = join(process.env.WORKFLOW_APP_DIR ?? import.meta.dirname, ".well-known/workflow/v1");
const require = createRequire(import.meta.url);
/** Workflow name -> its ID (the builder's, as `start()` needs it). */
const workflowIds = new Map();
/** Path -> handler; empty until the World is installed (503 until then). */
const routes = {};

function load(appUrl, verify) {
  const manifest = JSON.parse(readFileSync(join(DIR, "manifest.json"), "utf8"));
  for (const byName of Object.values(manifest.workflows)) {
    for (const [name, w] of Object.entries(byName)) workflowIds.set(name, w.workflowId);
  }
  const settings = settingsFromEnv();
  const token = tokenSource(settings)();
  for (const [route, file] of [
    ["/.well-known/workflow/v1/flow", "flow.js"],
    ["/.well-known/workflow/v1/step", "step.js"],
  ]) {
    const handler = require(join(DIR, file)).POST;
    routes[route] = verify ? verifiedRoute(handler, { settings, token, appUrl, route }) : handler;
  }
}

function json(res, status, value) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

async function handle(req, res, body) {
  const path = (req.url ?? "/").split("?")[0];
  if (workflowIds.size === 0) return json(res, 503, { error: "starting" });
  const route = routes[path];
  if (route && req.method === "POST") {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === "string") headers.set(k, v);
    }
    const answer = await route(
      new Request(`http://app${req.url}`, { method: "POST", headers, body }),
    );
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
    return;
  }
  let m = /^\/start\/([A-Za-z0-9_]+)$/.exec(path);
  if (m && req.method === "POST") {
    const workflowId = workflowIds.get(m[1]);
    if (!workflowId) return json(res, 404, { error: `no workflow named ${m[1]}` });
    const args = body.length ? JSON.parse(body.toString()) : [];
    if (!Array.isArray(args)) return json(res, 400, { error: "the body must be a JSON array" });
    const run = await start({ workflowId }, args);
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

const PROCESSES = Number(process.env.WORKFLOW_APP_PROCESSES || 1);
if (cluster.isPrimary && PROCESSES > 1) primary();
else serve();

/** Forks the processes; says where the app listens once every one of them has started. */
function primary() {
  const workers = Array.from({ length: PROCESSES }, () => cluster.fork());
  let ready = 0;
  for (const w of workers) {
    w.on("message", (m) => {
      if (m?.listening && ++ready === PROCESSES) console.log(JSON.stringify(m));
    });
    // One process gone takes the app down: its supervisor restarts the whole app.
    w.on("exit", (code) => {
      if (!stopping) process.exit(code ?? 1);
    });
  }
  let stopping = false;
  const stop = () => {
    stopping = true;
    let left = workers.length;
    for (const w of workers) {
      w.once("exit", () => --left === 0 && process.exit(0));
      w.process.kill("SIGTERM");
    }
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

function serve() {
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
    let world;
    if (process.env.WORKFLOW_TARGET_WORLD) {
      world = getWorld();
    } else {
      world = createWorld({ appUrl });
      setWorld(world);
    }
    load(appUrl, !process.env.WORKFLOW_TARGET_WORLD);
    await world.start();
    // One line the tests (and people) read: where the app listens (the primary's, with several).
    if (cluster.isWorker) process.send({ listening: appUrl });
    else console.log(JSON.stringify({ listening: appUrl }));
  });

  const stop = () => server.close(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

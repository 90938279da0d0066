// The example Workflow DevKit apps (examples/workflow on 4.x, examples/workflow-5 on the 5.x
// betas) for tests: built once with the real builder (`workflow build --target standalone`,
// under a lock so that parallel test files build each once), run as their own process (the
// folder's server.mjs with its World, world.mjs) against a gateway, with a step log that counts
// how often each step ran.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { eventually } from "./wait.js";

export const EXAMPLE_DIR = fileURLToPath(new URL("../../examples/workflow", import.meta.url));
/** The 5.x example app (its World, workflows and server). */
export const EXAMPLE_5_DIR = fileURLToPath(new URL("../../examples/workflow-5", import.meta.url));
/** What each build target writes last, whose age says whether the build is fresh. */
/** The states a run stays in once it has ended. */
const ENDED = ["completed", "failed", "cancelled"];

const OUTPUT = {
  standalone: ".well-known/workflow/v1/manifest.json",
  "vercel-build-output-api": ".vercel/output/config.json",
};
/** The Build Output API directory the `vercel-build-output-api` target writes. */
export const BUILD_OUTPUT_DIR = join(EXAMPLE_DIR, ".vercel/output");

/** Builds an example app (the 4.x one by default) unless its build is newer than its workflows. */
export async function buildExampleApp(
  target: keyof typeof OUTPUT = "standalone",
  appDir = EXAMPLE_DIR,
): Promise<void> {
  const output = join(appDir, OUTPUT[target]);
  const lock = join(appDir, ".build.lock");
  const locked = await eventually(
    () => {
      try {
        mkdirSync(lock); // atomic: only one builder at a time
        return true;
      } catch {
        return false;
      }
    },
    180_000,
    500,
  );
  if (!locked) throw new Error(`${lock} held for 3 minutes: remove it`);
  try {
    if (isFresh(appDir, output)) return;
    const r = spawnSync(
      process.execPath,
      [workspaceBin(appDir, "workflow"), "build", "--target", target],
      { cwd: appDir, encoding: "utf8", timeout: 170_000 },
    );
    if (r.status !== 0 || !existsSync(output)) {
      throw new Error(`workflow build failed:\n${r.stdout}\n${r.stderr}`);
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function isFresh(appDir: string, output: string): boolean {
  if (!existsSync(output)) return false;
  const built = statSync(output).mtimeMs;
  const sources = ["workflows/example.js", "package.json"].map(
    (f) => statSync(join(appDir, f)).mtimeMs,
  );
  return sources.every((t) => t < built);
}

/** A program of the app's dependencies: in its own node_modules, else hoisted to the root's. */
function workspaceBin(appDir: string, name: string): string {
  const own = join(appDir, "node_modules/.bin", name);
  return existsSync(own) ? own : join(appDir, "../../node_modules/.bin", name);
}

export interface RunState {
  readonly runId: string;
  readonly status: string;
  readonly output?: unknown;
}

export interface WorkflowApp {
  readonly url: string;
  readonly child: ChildProcess;
  /** Starts a run of the named workflow. */
  start(workflow: string, args: unknown[]): Promise<string>;
  run(runId: string): Promise<RunState>;
  /** Resolves with the run once it completed (rejects if it failed or `ms` passed). */
  completed(runId: string, ms?: number): Promise<RunState>;
  /** How often each step ran, by `<tag> <step>`. */
  stepCounts(): Promise<Map<string, number>>;
  /** How many steps ran, all runs together. */
  stepsRun(): Promise<number>;
  /** When each run of `<tag> <step>` began (ms). */
  stepTimes(tag: string, step: string): Promise<number[]>;
  /** The processes that ran the steps of runs whose tag starts with `prefix`. */
  stepProcesses(prefix: string): Promise<Set<number>>;
  /** Replaces the token the app's World reads (VQS_TOKEN_FILE). */
  setToken(token: string): Promise<void>;
  /** The app's output so far. */
  output(): string;
  stop(): Promise<void>;
}

export interface WorkflowAppOptions {
  /** The gateway (WORKFLOW_VERCEL_BACKEND_URL). */
  readonly gatewayUrl: string;
  readonly token: string;
  readonly deploymentId: string;
  /** Storage in Postgres; without, world-local's files in a temp directory. */
  readonly postgresUrl?: string;
  readonly env?: Record<string, string>;
  /** The port to listen on (default: any free one). */
  readonly port?: number;
  /** Options for node itself (`--cpu-prof`, which NODE_OPTIONS may not carry). */
  readonly nodeArgs?: readonly string[];
  /** The app's folder (default: the 4.x example, EXAMPLE_DIR). */
  readonly appDir?: string;
  /** Where the app's temporary files go (its world-local data, the step log; default tmpdir()). */
  readonly tmpDir?: string;
}

export async function startWorkflowApp(o: WorkflowAppOptions): Promise<WorkflowApp> {
  const appDir = o.appDir ?? EXAMPLE_DIR;
  const dir = await mkdtemp(join(o.tmpDir ?? tmpdir(), "vqs-wf-app-"));
  const tokenFile = join(dir, "token");
  const stepLog = join(dir, "steps.log");
  await writeFile(tokenFile, o.token);
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), join(appDir, "server.mjs")], {
    cwd: appDir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? dir,
      PORT: String(o.port ?? 0),
      WORKFLOW_VERCEL_BACKEND_URL: o.gatewayUrl,
      VQS_TOKEN_FILE: tokenFile,
      VERCEL_DEPLOYMENT_ID: o.deploymentId,
      STEP_LOG: stepLog,
      ...(o.postgresUrl
        ? { WORKFLOW_POSTGRES_URL: o.postgresUrl }
        : { WORKFLOW_LOCAL_DATA_DIR: join(dir, "data") }),
      ...o.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out = (out + c.toString()).slice(-200_000)));
  child.stderr.on("data", (c: Buffer) => (out = (out + c.toString()).slice(-200_000)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the app did not start:\n${out}`)), 30_000);
    const check = () => {
      const m = /\{"listening":"(http:\/\/[^"]+)"\}/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on("data", check);
    child.once("exit", () => reject(new Error(`the app exited:\n${out}`)));
  });

  const run = async (runId: string): Promise<RunState> => {
    const res = await fetch(`${url}/runs/${runId}`);
    if (!res.ok) throw new Error(`GET /runs/${runId}: ${res.status} ${await res.text()}`);
    return (await res.json()) as RunState;
  };
  const lines = async () =>
    (await readFile(stepLog, "utf8").catch(() => "")).split("\n").filter(Boolean);
  return {
    url,
    child,
    async start(workflow, args) {
      const res = await fetch(`${url}/start/${workflow}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(args),
      });
      if (res.status !== 201)
        throw new Error(`start ${workflow}: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { runId: string }).runId;
    },
    run,
    async completed(runId, ms = 60_000) {
      let state = await run(runId);
      const ended = await eventually(
        async () => ENDED.includes((state = await run(runId)).status),
        ms,
        200,
      );
      if (state.status === "completed") return state;
      if (!ended)
        throw new Error(`run ${runId} still ${state.status} after ${ms} ms:\n${out.slice(-3000)}`);
      throw new Error(`run ${runId} ${state.status}:\n${out.slice(-3000)}`);
    },
    async stepCounts() {
      const counts = new Map<string, number>();
      for (const l of await lines()) {
        const key = l.split(" ").slice(0, 2).join(" ");
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    },
    stepsRun: async () => (await lines()).length,
    async stepTimes(tag, step) {
      return (await lines())
        .map((l) => l.split(" "))
        .filter(([t, s]) => t === tag && s === step)
        .map(([, , at]) => Number(at));
    },
    async stepProcesses(prefix) {
      return new Set(
        (await lines())
          .map((l) => l.split(" "))
          .filter(([t]) => t!.startsWith(prefix))
          .map(([, , , pid]) => Number(pid)),
      );
    },
    setToken: (token) => writeFile(tokenFile, token),
    output: () => out,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await eventually(() => child.exitCode !== null || child.signalCode !== null, 5000);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Creates world-postgres's tables (its own setup program) in the database at `url`. */
export function migrateWorldPostgres(url: string): void {
  const setup = join(EXAMPLE_DIR, "node_modules/@workflow/world-postgres/bin/setup.js");
  const bin = existsSync(setup)
    ? setup
    : fileURLToPath(
        new URL("../../node_modules/@workflow/world-postgres/bin/setup.js", import.meta.url),
      );
  const r = spawnSync(process.execPath, [bin], {
    env: { PATH: process.env.PATH ?? "", WORKFLOW_POSTGRES_URL: url },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`world-postgres setup failed:\n${r.stdout}\n${r.stderr}`);
}

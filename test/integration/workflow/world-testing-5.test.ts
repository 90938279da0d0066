// The Workflow DevKit 5.x peer suite (@workflow/world-testing 5.0.0-beta.35) against the 5.x vqs
// World (examples/workflow-5), through a real gateway and nats-server. The suite runs as it ships,
// in its own vitest process (its cases spawn its own app servers). Five of its cases count flow
// invocations by parsing each push body as JSON; world-vercel 5.x sends CBOR, so their counter
// reads 0 and they fail after their run completed: they are expected failures, each checked to
// fail at that count and nowhere else. The second test runs the same five workflows through
// the suite's own server behind a counting proxy that decodes CBOR, and checks that each run
// completes with the flow invocations the suite expects.
import { decode } from "cbor-x";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { controlPort, ROOT, SERVER, SUITE } from "../../helpers/world-testing.js";

const fx = useGateways(1);
let dir: string;
let env: NodeJS.ProcessEnv;

/** The suite's cases that count flow invocations from JSON bodies, with what they expect. */
const COUNTED: Record<string, RegExp> = {
  "sequential steps complete in a single flow invocation": /expected \+?0 to be 1/,
  "sequential steps with stream complete in a single flow invocation": /expected \+?0 to be 1/,
  "sleep workflow requires exactly 2 flow invocations": /expected \+?0 to be 2/,
  "parallel steps (Promise.all) complete in 1-3 flow invocations":
    /expected \+?0 to be greater than or equal to 1/,
  "sequential steps carrying an AbortSignal still run in a single flow invocation":
    /expected \+?0 to be 1/,
};

/** The same five workflows (file, name, arguments) and the flow invocations each should take. */
const SAME_RUNS = [
  ["workflows/inline-execution.ts", "sequentialStepsWorkflow", [10], [1, 1]],
  ["workflows/inline-execution.ts", "sequentialStepsWithStreamWorkflow", [], [1, 1]],
  ["workflows/inline-execution.ts", "sleepWorkflow", [], [2, 2]],
  ["workflows/inline-execution.ts", "parallelStepsWorkflow", [], [1, 3]],
  ["workflows/signal-cost.ts", "signalCostWorkflow", [{ count: 5, withSignal: true }], [1, 1]],
] as const;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "vqs-world-testing-"));
  env = {
    ...process.env,
    WORKFLOW_VERCEL_BACKEND_URL: fx.gateways[0]!.url,
    VQS_TOKEN: await fx.issuer.token({ project_id: "prj_world_testing" }),
    VERCEL_DEPLOYMENT_ID: "dpl_world_testing",
    WORKFLOW_LOCAL_DATA_DIR: join(dir, "data"),
    VQS_WORKFLOW_MAX_CONCURRENCY: "20",
    VQS_WORKFLOW_RETRY_AFTER_SECONDS: "1", // the error cases' retries, sooner
    NODE_OPTIONS: `--import=${join(SUITE, "promise-with-resolvers.mjs")}`,
  };
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Result {
  readonly title: string;
  readonly status: string;
  readonly failureMessages: string[];
}

async function runSuite(): Promise<Result[]> {
  const out = join(dir, "results.json");
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      join(SUITE, "vitest.config.mjs"),
      "--reporter=json",
      `--outputFile=${out}`,
    ],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stdout.on("data", (c: Buffer) => (log += c.toString()));
  child.stderr.on("data", (c: Buffer) => (log += c.toString()));
  await new Promise((r) => child.on("exit", r));
  const json = JSON.parse(await readFile(out, "utf8").catch(() => `{"testResults":[]}`)) as {
    testResults: { assertionResults: Result[] }[];
  };
  const results = json.testResults.flatMap((f) => f.assertionResults);
  if (results.length === 0) throw new Error(`the peer suite did not run:\n${log.slice(-4000)}`);
  return results;
}

describe("@workflow/world-testing 5.0.0-beta.35 on vqs", () => {
  it("passes every case but the five that parse CBOR push bodies as JSON, which fail only at their count", async () => {
    const results = await runSuite();
    const failed = results.filter((r) => r.status !== "passed");
    const unexpected = failed.filter((r) => !(r.title in COUNTED));
    expect(
      unexpected.map((r) => `${r.title}: ${r.failureMessages.join("\n").slice(0, 2000)}`),
    ).toEqual([]);
    for (const [title, message] of Object.entries(COUNTED)) {
      const r = results.find((x) => x.title === title);
      expect(r, title).toBeDefined();
      // Fixed upstream, it would pass: this says so (and the expectation here must go).
      expect(r!.status, title).toBe("failed");
      const failure = r!.failureMessages.join("\n");
      expect(failure, title).toMatch(message);
      expect(failure, title).toContain("inline-execution.mjs"); // at the count, after completion
    }
    expect(results.length).toBeGreaterThanOrEqual(12);
  }, 300_000);

  it("completes the same five runs with the flow invocations they expect, counted from CBOR", async () => {
    const counts = new Map<string, number>();
    /** Each run's pushes: message ID and delivery count (a redelivery shows as a count above 1). */
    const pushes = new Map<string, string[]>();
    let target = "";
    // Between vqs and the suite's own app server: counts each flow push by its run (the body is
    // world-vercel's CBOR wrapper, {payload: {runId}, queueName, deploymentId}), then forwards it.
    const proxy: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        if (req.url === "/.well-known/workflow/v1/flow") {
          const runId = runIdOf(body, req.headers["content-type"] ?? "");
          if (runId) {
            counts.set(runId, (counts.get(runId) ?? 0) + 1);
            const id = `${String(req.headers["ce-vqsmessageid"])}#${String(req.headers["ce-vqsdeliverycount"])}`;
            pushes.set(runId, [...(pushes.get(runId) ?? []), id]);
          }
        }
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(
            ([k, v]) =>
              typeof v === "string" && !["host", "connection", "content-length"].includes(k),
          ),
        ) as Record<string, string>;
        fetch(`${target}${req.url ?? "/"}`, {
          method: req.method ?? "POST",
          headers,
          ...(body.length > 0 ? { body } : {}),
        })
          .then(async (r) => {
            res.writeHead(r.status, Object.fromEntries(r.headers));
            res.end(Buffer.from(await r.arrayBuffer()));
          })
          .catch((err: unknown) => res.writeHead(502).end(String(err)));
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const server = spawn(process.execPath, [SERVER], {
      cwd: ROOT,
      env: {
        ...env,
        WORKFLOW_TARGET_WORLD: "./examples/workflow-5/world.mjs",
        CONTROL_FD: "3",
        VQS_WORKFLOW_APP_URL: proxyUrl,
        WORKFLOW_LOCAL_DATA_DIR: join(dir, "own-data"),
      },
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    let log = "";
    server.stdout?.on("data", (c: Buffer) => (log += c.toString()));
    server.stderr?.on("data", (c: Buffer) => (log += c.toString()));
    try {
      target = `http://127.0.0.1:${await controlPort(server)}`;
      // One at a time, as the suite runs them.
      for (const [file, workflow, args, [min, max]] of SAME_RUNS) {
        const res = await fetch(`${target}/invoke`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ file, workflow, args }),
        });
        expect(res.status, log.slice(-2000)).toBe(200);
        const { runId } = (await res.json()) as { runId: string };
        const deadline = Date.now() + 60_000;
        let status = "";
        while (status !== "completed") {
          expect(Date.now() < deadline, `${workflow} is ${status}\n${log.slice(-2000)}`).toBe(true);
          await new Promise((r) => setTimeout(r, 200));
          status = ((await (await fetch(`${target}/runs/${runId}`)).json()) as { status: string })
            .status;
        }
        const n = counts.get(runId) ?? 0;
        const seen = `${workflow}: ${JSON.stringify(pushes.get(runId))}`;
        expect(n, seen).toBeGreaterThanOrEqual(min);
        expect(n, seen).toBeLessThanOrEqual(max);
      }
    } finally {
      server.kill();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  }, 120_000);
});

/** The run a flow push is for: world-vercel's wrapper in CBOR (or JSON), `{payload: {runId}}`. */
function runIdOf(body: Buffer, contentType: string): string | null {
  try {
    const wrapper = (/cbor/.test(contentType) ? decode(body) : JSON.parse(body.toString())) as {
      payload?: { runId?: unknown };
    };
    return typeof wrapper.payload?.runId === "string" ? wrapper.payload.runId : null;
  } catch {
    return null;
  }
}

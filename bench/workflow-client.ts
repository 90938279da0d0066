// `npm run bench:workflow-client [-- --pairs 8 --length 20]`: what world-vercel's queue client
// (4.7.4, its @vercel/queue 0.3.1) costs an app per delivery, without the Workflow runtime or
// Postgres, and whether another HTTP dispatcher handed to it (its public `config.dispatcher`)
// would cost less. One gateway process and one nats-server; in this process an HTTP server that
// answers pushes as examples/workflow/server.mjs does, through world-vercel's queue handler,
// whose handler publishes the chain's next message (as a step does). 50 chains at once; slices of
// `--length` deliveries per chain alternate A B B A between world-vercel's own dispatcher (A)
// and an undici 6 Agent with the same retries and timeouts (B): the answer is the median of the
// paired ratios of this process's CPU and event-loop time per delivery, with the gateway's
// requests per delivery. Never part of `npm test`; everything on 127.0.0.1.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Agent, RetryAgent } from "undici";
import { startIssuer } from "../test/helpers/issuer.js";
import { killGatewayProcesses, spawnGateway } from "../test/helpers/processes/gateway-process.js";
import { startTestNats } from "../test/helpers/processes/nats.js";
import { round } from "./lib/stats.js";

const { values } = parseArgs({
  options: {
    pairs: { type: "string", default: "8" },
    length: { type: "string", default: "20" },
  },
});
const PAIRS = Number(values.pairs);
const LENGTH = Number(values.length);
const CHAINS = 50;
const DEPLOYMENT = "dpl_bench";

interface StepPayload {
  workflowName: string;
  workflowRunId: string;
  workflowStartedAt: number;
  stepId: string;
}
interface WorldQueue {
  queue(name: string, payload: StepPayload): Promise<unknown>;
  createQueueHandler(
    prefix: string,
    handler: (payload: unknown) => Promise<void>,
  ): (request: Request) => Promise<Response>;
}

const nats = await startTestNats();
const issuer = await startIssuer();
try {
  const gateway = await spawnGateway(nats.url, issuer, {
    VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1:*",
    VQS_MAX_PUSHES_IN_FLIGHT_PER_NAMESPACE: String(CHAINS),
  });
  const token = await issuer.token();
  // world-vercel reads its base URL and deployment from the environment, as world.mjs sets them.
  process.env.WORKFLOW_VERCEL_BACKEND_URL = gateway.url;
  process.env.VERCEL_DEPLOYMENT_ID = DEPLOYMENT;
  const { createQueue } = (await import("@workflow/world-vercel")) as unknown as {
    createQueue: (config: object) => WorldQueue;
  };
  const make = (dispatcher?: object): WorldQueue =>
    createQueue({
      projectConfig: { projectId: "vqs", teamId: "vqs", environment: "production" },
      token,
      ...(dispatcher ? { dispatcher } : {}),
    });
  // B: world-vercel's queue settings (64 connections, 10 s idle, 30 s deadline, retries of 5xx
  // and broken connections) on the undici major that Node 20's fetch speaks.
  const undici6 = new RetryAgent(
    new Agent({
      connections: 64,
      keepAliveTimeout: 10_000,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    }),
    {
      retryAfter: true,
      statusCodes: [500, 502, 503, 504],
      maxRetries: 2,
      errorCodes: ["ECONNRESET", "ECONNREFUSED", "EPIPE", "UND_ERR_SOCKET"],
    },
  );
  const queues: Record<"A" | "B", WorldQueue> = { A: make(), B: make(undici6) };

  let delivered = 0;
  let target = 0;
  let reached = (): void => undefined;
  const handlers = new Map<string, (request: Request) => Promise<Response>>();
  for (const [name, q] of Object.entries(queues)) {
    handlers.set(
      `/${name}`,
      q.createQueueHandler("__wkf_step_", async (message) => {
        const p = message as StepPayload;
        const [chain, n] = p.stepId.split("-").map(Number) as [number, number];
        delivered++;
        if (n + 1 < LENGTH) {
          await q.queue(`__wkf_step_bench${name}`, { ...p, stepId: `${chain}-${n + 1}` });
        }
        if (delivered === target) setImmediate(reached);
      }),
    );
  }
  // As examples/workflow/server.mjs answers a push: the request as a web Request.
  const answer = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const handler = handlers.get(req.url ?? "");
    if (!handler) return void res.writeHead(404).end();
    const out = await handler(
      new Request(`http://app${req.url}`, { method: "POST", headers, body }),
    );
    res.writeHead(out.status, Object.fromEntries(out.headers));
    res.end(Buffer.from(await out.arrayBuffer()));
  };
  let pushConnections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => void answer(req, res, Buffer.concat(chunks)));
  });
  server.on("connection", () => pushConnections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  for (const name of Object.keys(queues)) {
    const url = `${gateway.url}/api/v3/topic/__wkf_step_bench${name}/consumer/default/settings`;
    const put = await fetch(url, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${token}`,
        "vqs-deployment-id": DEPLOYMENT,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        push: { url: `http://127.0.0.1:${port}/${name}`, maxConcurrency: CHAINS },
      }),
    });
    if (!put.ok) throw new Error(`settings refused: ${put.status} ${await put.text()}`);
  }

  /** The gateway's request counts by `METHOD route`. */
  const requestCounts = async (): Promise<Map<string, number>> => {
    const text = await (await fetch(gateway.metricsUrl)).text();
    const counts = new Map<string, number>();
    for (const line of text.split("\n")) {
      const m = /^vqs_http_request_duration_seconds_count\{.*method="(\w+)".*route="([^"]+)"/.exec(
        line,
      );
      if (!m) continue;
      const key = `${m[1]} ${m[2]}`;
      counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
    }
    return counts;
  };

  let slice = 0;
  /** One slice: CHAINS chains of LENGTH deliveries through queue `name`; per delivery, ms. */
  const run = async (name: "A" | "B") => {
    const n = CHAINS * LENGTH;
    target = delivered + n;
    const done = new Promise<void>((r) => (reached = r));
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    slice++;
    await Promise.all(
      Array.from({ length: CHAINS }, (_, c) =>
        queues[name].queue(`__wkf_step_bench${name}`, {
          workflowName: "bench",
          workflowRunId: `wrun_${slice}_${c}`,
          workflowStartedAt: 0,
          stepId: `${c}-0`,
        }),
      ),
    );
    await done;
    const cpu = process.cpuUsage(cpu0);
    return {
      cpuMs: (cpu.user + cpu.system) / 1000 / n,
      eluMs: performance.eventLoopUtilization(elu0).active / n,
    };
  };

  await run("A"); // warm-up: connections open, code compiled
  await run("B");
  const requests0 = await requestCounts();
  const connections0 = pushConnections;
  const cpuRatios: number[] = [];
  const eluRatios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const order: ("A" | "B")[] = i % 2 === 0 ? ["A", "B"] : ["B", "A"];
    const r: Record<string, { cpuMs: number; eluMs: number }> = {};
    for (const name of order) r[name] = await run(name);
    cpuRatios.push(r.B!.cpuMs / r.A!.cpuMs);
    eluRatios.push(r.B!.eluMs / r.A!.eluMs);
    process.stderr.write(
      `pair ${i + 1}: CPU per delivery A ${round(r.A!.cpuMs)} ms, B ${round(r.B!.cpuMs)} ms; ` +
        `event-loop time A ${round(r.A!.eluMs)} ms, B ${round(r.B!.eluMs)} ms\n`,
    );
  }
  const requests1 = await requestCounts();
  const deliveries = PAIRS * 2 * CHAINS * LENGTH;
  const perDelivery = [...requests1]
    .map(([k, v]) => [k, round((v - (requests0.get(k) ?? 0)) / deliveries)] as const)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  process.stderr.write(
    `requests to the gateway per delivery: ${perDelivery}; new push connections into the app: ` +
      `${pushConnections - connections0}\n` +
      `B (undici 6 Agent) / A (world-vercel's dispatcher), median of ${PAIRS} pairs: CPU per ` +
      `delivery x${round(median(cpuRatios))}, event-loop time x${round(median(eluRatios))}\n`,
  );
  server.close();
  await undici6.close();
} finally {
  killGatewayProcesses();
  await nats.dispose();
  await issuer.close();
}
process.exit(0);

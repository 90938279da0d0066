// The HTTP floor scenario of `npm run bench`: the gateway's CPU per request of each operation
// (publish, receive 10, acknowledge; push from the push scenario) against the same Fastify with
// nothing in it answering 204 on routes of the same shape (bench/floor-server-process.ts), driven
// by the same load generator at the same concurrency, in one run. The multiple says how much of a
// request is the gateway's own work and how much HTTP on Node costs anyway.
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GatewayApi } from "../gw.js";
import { createHttpClient, parseMultipart } from "../http-client.js";
import { errorKind } from "../raw.js";
import { drive, type Processes, type ResourceUse, type Window } from "../runner.js";
import { Recorder, round, sleep } from "../stats.js";

const BENCH_DIR = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export interface FloorContext {
  readonly api: GatewayApi;
  readonly procs: Processes;
  readonly token: string;
  /** Makes sure `topic`'s stream holds at least `n` messages (raw JetStream, not measured). */
  readonly fill: (topic: string, n: number) => Promise<void>;
  readonly log: (line: string) => void;
}

export interface FloorOptions {
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly inFlight: number;
  readonly payload: Buffer;
}

/** One measured operation: requests per second and the serving process's CPU per request. */
export interface FloorRun {
  readonly requestsPerSec: number;
  readonly cpuUsPerRequest: number;
  readonly errors: number;
  readonly stoppedEarly?: string;
}

export interface FloorResult {
  readonly inFlight: number;
  readonly payloadBytes: number;
  readonly floor: {
    readonly publish: FloorRun;
    readonly receive: FloorRun;
    readonly ack: FloorRun;
  };
  readonly gateway: {
    readonly publish: FloorRun;
    readonly receive: FloorRun;
    readonly ack: FloorRun;
  };
}

/** CPU µs per request of the measured processes (all of `procs.gatewayPids`). */
function runOf(rec: Recorder, window: Window, r: ResourceUse): FloorRun {
  const seconds = window.seconds;
  return {
    requestsPerSec: round(seconds > 0 ? rec.operations / seconds : 0, 0),
    cpuUsPerRequest: round(
      rec.operations > 0 ? ((r.gatewayCpu / 100) * seconds * 1e6) / rec.operations : NaN,
      1,
    ),
    errors: rec.errors,
    ...(window.stopReason ? { stoppedEarly: window.stopReason } : {}),
  };
}

async function startFloorServer(): Promise<{ url: string; pid: number; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(BENCH_DIR, "floor-server-process.ts")],
    {
      cwd: dirname(BENCH_DIR),
      env: { ...process.env, NODE_ENV: "production" },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("floor server did not start in 20 s")), 20_000);
    child.once("exit", (code) => reject(new Error(`floor server exited (${code})`)));
    child.on("message", (m: { type?: string; url?: string }) => {
      if (m.type === "listening" && m.url) {
        clearTimeout(t);
        resolve(m.url);
      }
    });
  });
  return { url, pid: child.pid ?? 0, child };
}

/** An op answering `want`; `onBody` sees each counted answer's response. */
function simpleOp(
  call: () => Promise<{ status: number }>,
  want: number,
  rec: Recorder,
): (w: number, window: Window) => Promise<void> {
  return async (_w, window) => {
    try {
      const res = await call();
      const done = performance.now();
      if (res.status !== want) rec.error(`HTTP ${res.status}`);
      else if (window.counts(done)) rec.record(0);
    } catch (err) {
      rec.error(errorKind(err));
      await sleep(10);
    }
  };
}

export async function floorScenario(ctx: FloorContext, o: FloorOptions): Promise<FloorResult> {
  const n = o.inFlight;
  const run = async (
    procs: Processes,
    op: (rec: Recorder) => (w: number, win: Window) => Promise<void>,
  ) => {
    const rec = new Recorder(1);
    const { window, resources } = await drive(procs, n, o.warmupMs, o.durationMs, op(rec));
    return runOf(rec, window, resources);
  };
  ctx.log(`floor: bare Fastify (204) and the gateway, CPU per request, ${n} in flight`);
  const server = await startFloorServer();
  const client = createHttpClient([server.url]);
  const bare = new GatewayApi(client, ctx.token);
  const floorProcs: Processes = { gatewayPids: [server.pid], natsPid: ctx.procs.natsPid };
  // A handle of the gateway's length, so the floor parses a path of the same size.
  const handle = "h".repeat(180);
  let floor: FloorResult["floor"];
  try {
    floor = {
      publish: await run(floorProcs, (rec) =>
        simpleOp(() => bare.publish("t", o.payload), 204, rec),
      ),
      receive: await run(floorProcs, (rec) => simpleOp(() => bare.receive("t", "g"), 204, rec)),
      ack: await run(floorProcs, (rec) => simpleOp(() => bare.ack("t", "g", handle), 204, rec)),
    };
  } finally {
    client.close();
    server.child.kill("SIGTERM");
  }

  const topic = `bench-floor-${Date.now()}`;
  const api = ctx.api;
  const publish = await run(ctx.procs, (rec) =>
    simpleOp(() => api.publish(topic, o.payload), 201, rec),
  );
  // Receives (10 each, no ack) whose handles the acknowledge run then uses up.
  const windowS = (o.warmupMs + o.durationMs) / 1000;
  await ctx.fill(topic, Math.ceil(Math.max(20_000, publish.requestsPerSec * 10 * windowS * 1.5)));
  const handles: string[] = [];
  const receive = await run(ctx.procs, (rec) => async (_w, window) => {
    try {
      const res = await api.receive(topic, "floor");
      const done = performance.now();
      if (res.status === 204) return window.stop("backlog ran out");
      if (res.status !== 200) return rec.error(`HTTP ${res.status}`);
      for (const p of parseMultipart(res.contentType, res.body)) {
        handles.push(p.headers.get("vqs-receipt-handle") ?? "");
      }
      if (window.counts(done)) rec.record(0);
    } catch (err) {
      rec.error(errorKind(err));
      await sleep(10);
    }
  });
  const ack = await run(ctx.procs, (rec) => async (_w, window) => {
    const h = handles.pop();
    if (h === undefined) return window.stop("handles ran out");
    try {
      const res = await api.ack(topic, "floor", h);
      const done = performance.now();
      if (res.status !== 204) rec.error(`HTTP ${res.status}`);
      else if (window.counts(done)) rec.record(0);
    } catch (err) {
      rec.error(errorKind(err));
    }
  });
  return { inFlight: n, payloadBytes: o.payload.length, floor, gateway: { publish, receive, ack } };
}

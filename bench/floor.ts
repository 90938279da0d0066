// `npm run bench:floor [-- --rounds n] [-- --build]`: the HTTP floor. The gateway's CPU per request
// of publish, receive 10 and acknowledge (1 KiB, 64 in flight) against the same Fastify with
// nothing in it answering 204 on routes of the same shape (bench/floor-server-process.ts), driven
// by the same load generator: the multiple says how much of a request is the gateway's own work
// and how much HTTP on Node costs anyway. Each round (about 15 s) measures the floor and then the
// gateway; the answer is the median of the rounds' multiples (after a warm-up round). `--build`
// measures the gateway compiled (`npm run build:bench` first), as production runs it.
// Everything on 127.0.0.1, bounded.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GatewayApi, topicStream } from "./lib/gw.js";
import { createHttpClient, parseMultipart } from "./lib/http-client.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import { errorKind, fillStream } from "./lib/raw.js";
import { drive, type Processes, type Window } from "./lib/runner.js";
import { benchServers, elapsedLog } from "./lib/standalone.js";
import { median, Recorder, round, sleep } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, build: { type: "boolean", default: false } },
});
const rounds = Math.min(20, Math.max(1, Number(values.rounds) || 5));
const OPS = ["publish", "receive", "ack"] as const;
type Op = (typeof OPS)[number];
const log = elapsedLog();

async function startFloorServer(): Promise<{ url: string; pid: number; stop: () => void }> {
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
  return { url, pid: child.pid ?? 0, stop: () => child.kill("SIGTERM") };
}

/** Requests a second of the last run: the publish run before a backlog is filled, which it sizes. */
let publishRate = 0;

/** Runs `op` on 64 workers; the serving process's (`procs.gatewayPids`) CPU µs per request. */
async function cpuPerRequest(
  procs: Processes,
  op: (rec: Recorder) => (w: number, win: Window) => Promise<void>,
): Promise<number> {
  const rec = new Recorder(1);
  const { window, resources } = await drive(procs, 64, 500, 1500, op(rec));
  const us = (resources.gatewayCpu / 100) * window.seconds * 1e6;
  publishRate = window.seconds > 0 ? rec.operations / window.seconds : 0;
  return round(rec.operations > 0 ? us / rec.operations : NaN, 1);
}

/** An op answering `want`. */
const simpleOp =
  (call: () => Promise<{ status: number }>, want: number) =>
  (rec: Recorder) =>
  async (_w: number, window: Window) => {
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

const servers = await benchServers("vqs-bench-floor-");
const { root, issuer } = servers;
const endTimeLimit = boundRun(servers.cleanup, (rounds * 40 + 100) * 1000, log);

try {
  const { nats, gateway } = await servers.start({
    natsStore: join(root, "store"),
    natsLog: join(root, "nats-server.log"),
    logFile: join(root, "gateway.log"),
    build: values.build,
  });
  const nc = await connect({ servers: nats.url, name: "vqs-bench-floor" });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const client = createHttpClient([gateway.url]);
  const api = new GatewayApi(client, issuer.token);
  const procs: Processes = { gatewayPids: [gateway.pid], natsPid: nats.pid };
  const payload = randomBytes(1024);
  const multiples: Record<Op, number[]> = { publish: [], receive: [], ack: [] };
  const lines: string[] = [];
  // Round 0 is a warm-up (V8 optimises the hot paths of both servers only after thousands of
  // calls): measured, not counted.
  for (let r = 0; r <= rounds; r++) {
    const load = loadAverage();
    const server = await startFloorServer();
    const bareClient = createHttpClient([server.url]);
    const bare = new GatewayApi(bareClient, issuer.token);
    const bareProcs: Processes = { gatewayPids: [server.pid], natsPid: nats.pid };
    // A handle of the gateway's length, so the floor parses a path of the same size.
    const handle = "h".repeat(180);
    let floor: Record<Op, number>;
    try {
      floor = {
        publish: await cpuPerRequest(
          bareProcs,
          simpleOp(() => bare.publish("t", payload), 204),
        ),
        receive: await cpuPerRequest(
          bareProcs,
          simpleOp(() => bare.receive("t", "g"), 204),
        ),
        ack: await cpuPerRequest(
          bareProcs,
          simpleOp(() => bare.ack("t", "g", handle), 204),
        ),
      };
    } finally {
      bareClient.close();
      server.stop();
    }
    const topic = `bench-floor-${r}`;
    const publish = await cpuPerRequest(
      procs,
      simpleOp(() => api.publish(topic, payload), 201),
    );
    // Receives (10 each, no ack) whose handles the acknowledge run then uses up.
    const s = await topicStream({ api, jsm }, topic, payload);
    await fillStream(
      js,
      s,
      payload,
      Math.ceil(Math.max(20_000, publishRate * 30)),
      120,
      s.makeHeaders,
    );
    const handles: string[] = [];
    const receive = await cpuPerRequest(procs, (rec) => async (_w, window) => {
      const res = await api.receive(topic, "floor");
      const done = performance.now();
      if (res.status === 204) return window.stop("backlog ran out");
      if (res.status !== 200) return rec.error(`HTTP ${res.status}`);
      for (const p of parseMultipart(res.contentType, res.body)) {
        handles.push(p.headers.get("vqs-receipt-handle") ?? "");
      }
      if (window.counts(done)) rec.record(0);
    });
    const ack = await cpuPerRequest(procs, (rec) => async (_w, window) => {
      const h = handles.pop();
      if (h === undefined) return window.stop("handles ran out");
      await simpleOp(() => api.ack(topic, "floor", h), 204)(rec)(0, window);
    });
    const gw: Record<Op, number> = { publish, receive, ack };
    const cells = OPS.map((op) => {
      if (r > 0) multiples[op].push(gw[op] / floor[op]);
      return `${gw[op]} / ${floor[op]} (${round(gw[op] / floor[op], 2)}x)`;
    });
    if (r > 0) lines.push(`| ${r} | ${load} | ${cells.join(" | ")} |`);
    log(`round ${r}${r === 0 ? " (warm-up)" : ""}: ${cells.join(", ")}`);
  }
  client.close();
  await nc.close();
  process.stdout.write(
    [
      "",
      `vqs bench:floor, ${new Date().toISOString()}: gateway (${values.build ? "compiled build" : "sources under tsx"}) / floor CPU µs per request, 1 KiB, 64 in flight`,
      "",
      "| round | load average | publish | receive 10 | acknowledge |",
      "| ---: | ---: | ---: | ---: | ---: |",
      ...lines,
      `| median | | ${OPS.map((op) => `${round(median(multiples[op]), 2)}x`).join(" | ")} |`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit();
  await servers.cleanup();
}

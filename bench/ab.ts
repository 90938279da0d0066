// `npm run bench:ab -- <checkout A> [checkout B] [--mode MODE] [--slices n] [--build] [--cpu-prof dir]`: is B's gateway
// faster than A's? Both gateways run at once against one nats-server (each started by its own
// checkout's bench/lib/gateways.ts, B defaulting to this one), and the load generator moves
// between them in short slices, A B B A ..., 64 requests in flight, 1 KiB messages. The answer is
// the median of the paired slice ratios B/A. Modes: receive (receive 10 + ack each), publish,
// push (each gateway pushes to a plain endpoint, autoAck, maxConcurrency 64: lib/push/ab.ts).
// `--build`: both gateways from their checkout's compiled build (`npm run build:bench` in each first),
// as production runs them, rather than from the sources under tsx.
//
// Why: on a shared VM the speed of the whole machine drifts by ±30 % within minutes (neighbours,
// steal), so two benchmark runs one after the other cannot tell a 10 % change from the drift. In
// slices of a second and a half, each pair sees nearly the same machine. Make a checkout of the
// commit to compare with `git worktree add /tmp/base <commit>` (it needs node_modules: a symlink
// to this checkout's does).
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, headers } from "@nats-io/transport-node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  benchGatewayEnv,
  type GatewayProcess,
  type GatewayProcessOptions,
} from "./lib/gateways.js";
import { abPushSlices } from "./lib/push/ab.js";
import { createHttpClient, parseMultipart } from "./lib/http-client.js";
import { GatewayApi } from "./lib/gw.js";
import { AUDIENCE, ISSUER } from "../test/helpers/issuer.js";
import { startBenchNats } from "./lib/nats-server.js";
import { boundRun, sampleProc } from "./lib/proc.js";
import { startBenchIssuer } from "./lib/standalone.js";
import { startPushEndpoint } from "./lib/push/endpoints.js";
import { sleep } from "./lib/stats.js";

const HERE = dirname(dirname(fileURLToPath(import.meta.url)));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    mode: { type: "string", default: "receive" },
    slices: { type: "string", default: "20" },
    build: { type: "boolean", default: false },
    "cpu-prof": { type: "string" },
  },
});
const MODES = ["receive", "publish", "push"] as const;
type Mode = (typeof MODES)[number];
if (positionals.length < 1 || !(MODES as readonly string[]).includes(values.mode)) {
  console.error(`usage: npm run bench:ab -- <checkout A> [checkout B] [--mode ${MODES.join("|")}]`);
  process.exit(2);
}
const trees = [resolve(positionals[0]!), resolve(positionals[1] ?? HERE)] as const;
const mode = values.mode as Mode;
const slices = Math.max(2, Number(values.slices));
const IN_FLIGHT = 64;
const SETTLE_MS = 300;
const SLICE_MS = 1200;

const dir = await mkdtemp(join(tmpdir(), "vqs-ab-"));
const nats = await startBenchNats(join(dir, "store"), join(dir, "nats.log"));
const issuer = await startBenchIssuer();
// This checkout's benchmark environment for both (the other checkout's module starts its own).
const env = benchGatewayEnv(nats.url, issuer.jwksUrl, ISSUER, AUDIENCE);
const gateways: GatewayProcess[] = [];
const cleanup = async () => {
  for (const g of gateways) await g.stop().catch(() => undefined);
  await issuer.close().catch(() => undefined);
  await nats.stop().catch(() => undefined);
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
};
// A signal, the time limit or a failure anywhere (a gateway that did not start, say) stops what
// the run started.
const endTimeLimit = boundRun(cleanup, 30 * 60_000, console.error);
process.once("uncaughtException", (err) => {
  console.error(err);
  void cleanup().finally(() => process.exit(1));
});
for (const [i, tree] of trees.entries()) {
  const lib = (await import(join(tree, "bench/lib/gateways.ts"))) as {
    startGatewayProcess(o: GatewayProcessOptions): Promise<GatewayProcess>;
  };
  // Push: a region each, or both gateways would push both groups (every gateway of a region does).
  const region: Record<string, string> = mode === "push" ? { VQS_REGION: `bench${i + 1}` } : {};
  gateways.push(
    await lib.startGatewayProcess({
      env: { ...env, ...region },
      logFile: join(dir, `gw-${i}.log`),
      ...(values.build ? { build: true } : {}),
      // `--cpu-prof <dir>`: each gateway writes a V8 CPU profile into <dir>/a or <dir>/b.
      ...(values["cpu-prof"]
        ? { nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${join(values["cpu-prof"], "ab"[i]!)}`] }
        : {}),
    }),
  );
}

const topic = "ab";
const payload = Buffer.alloc(1024, 120);
const apis = gateways.map((g) => new GatewayApi(createHttpClient([g.url]), issuer.token));
if (mode !== "push" && (await apis[0]!.publish(topic, payload)).status !== 201)
  throw new Error("first publish failed");
// Enough for each group at 8,000 msg/s through its warm-up and its half of the slices.
if (mode === "receive") await fillBacklog(Math.ceil((slices * 0.75 + 5) * 8_000));

// Each slice counts what the active gateway completes; the other one only finishes what it had.
let active = 0;
let completed = 0;
let stop = false;
const worker = async () => {
  while (!stop) {
    const i = active;
    const api = apis[i]!;
    if (mode === "publish") {
      if ((await api.publish(topic, payload)).status === 201 && i === active) completed++;
      continue;
    }
    const group = `g${i}`;
    const res = await api.receive(topic, group);
    if (res.status !== 200) continue;
    for (const part of parseMultipart(res.contentType, res.body)) {
      const ack = await api.ack(topic, group, part.headers.get("vqs-receipt-handle") ?? "");
      if (ack.status === 204 && i === active) completed++;
    }
  }
};
const rates: [number[], number[]] = [[], []];
const cpu: [number[], number[]] = [[], []];
if (mode === "push") {
  const nc = await connect({ servers: nats.url });
  const endpoint = await startPushEndpoint({ logFile: join(dir, "endpoint.log") });
  const r = await abPushSlices({
    apis: [apis[0]!, apis[1]!],
    pids: [gateways[0]!.pid, gateways[1]!.pid],
    endpoint,
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    payload,
    slices,
    sliceMs: SLICE_MS,
    settleMs: SETTLE_MS,
    inFlight: IN_FLIGHT,
  });
  rates[0].push(...r.rates[0]);
  rates[1].push(...r.rates[1]);
  cpu[0].push(...r.cpu[0]);
  cpu[1].push(...r.cpu[1]);
  await endpoint.stop();
  await nc.close();
} else {
  const workers = Array.from({ length: IN_FLIGHT }, worker);
  for (const i of [0, 1, 0, 1]) {
    active = i; // warm-up: V8 optimises the hot paths of both
    await sleep(2000);
  }
  for (let s = 0; s < slices; s++) {
    const i = ([0, 1, 1, 0] as const)[s % 4] ?? 0;
    active = i;
    await sleep(SETTLE_MS);
    completed = 0;
    const c0 = sampleProc(gateways[i]!.pid);
    const t0 = performance.now();
    await sleep(SLICE_MS);
    const n = completed;
    const seconds = (performance.now() - t0) / 1000;
    const c1 = sampleProc(gateways[i]!.pid);
    rates[i].push(n / seconds);
    // NaN for a slice without a reading or a message: it stays paired, and drops out of medians.
    cpu[i].push(c0 && c1 && n > 0 ? ((c1.cpuSeconds - c0.cpuSeconds) / n) * 1e6 : NaN);
  }
  stop = true;
  await Promise.all(workers);
}

// Of the finite values: a slice that completed nothing on one side gives no ratio.
const median = (a: readonly number[]) => {
  const f = a.filter(Number.isFinite).sort((x, y) => x - y);
  return f[Math.floor(f.length / 2)];
};
const ratios = rates[0].map((a, k) => rates[1][k]! / a);
const line = (name: string, i: 0 | 1) =>
  `${name} ${trees[i]}: ${median(rates[i])?.toFixed(0)} msg/s, ` +
  `${median(cpu[i])?.toFixed(0) ?? "n/a"} µs of gateway CPU per message`;
console.log(
  `${mode}, 1 KiB, ${IN_FLIGHT} in flight, ${slices} slices of ${SLICE_MS} ms` +
    (values.build ? ", gateways from their compiled builds" : ""),
);
console.log(line("A", 0));
console.log(line("B", 1));
console.log(
  `B/A, median of paired slices: ${median(ratios)?.toFixed(3)} ` +
    `(pairs: ${ratios.map((r) => r.toFixed(2)).join(" ")})`,
);
// CPU per message drifts less than the rate when the machine's other load comes and goes.
const cpuRatios = cpu[0].length === cpu[1].length ? cpu[0].map((a, k) => cpu[1][k]! / a) : [];
if (cpuRatios.length) {
  console.log(
    `gateway CPU per message B/A, median of paired slices: ${median(cpuRatios)?.toFixed(3)} ` +
      `(pairs: ${cpuRatios.map((r) => r.toFixed(2)).join(" ")})`,
  );
}

endTimeLimit();
await cleanup();

/** Stores `count` messages in the topic's stream directly, as the gateway would. */
async function fillBacklog(count: number): Promise<void> {
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  let subject = "";
  for await (const s of jsm.streams.list()) {
    const filter = s.config.subjects?.[0];
    if (/^VQS_[0-9a-f]{32}$/.test(s.config.name) && filter) subject = filter.replace(/>$/, "m");
  }
  if (!subject) throw new Error("the topic's stream was not found");
  const js = jetstream(nc);
  const h = headers();
  h.set("Vqs-Nonce", "AAAAAAAAAAAAAAAA");
  h.set("Vqs-Retention", "86400");
  let batch: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    batch.push(js.publish(subject, payload, { headers: h }));
    if (batch.length >= 500) {
      await Promise.all(batch);
      batch = [];
    }
  }
  await Promise.all(batch);
  await nc.close();
}

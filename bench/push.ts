// `npm run bench:push [-- --quick] [options]`: the push scenario group alone
// (bench/lib/push/scenario.ts) on its own nats-server and gateway process: push to a plain
// endpoint against polled receive 10 + ack, in paired slices, then
// publish-to-handler latency. See bench/README.md. Never part of `npm test`; everything on
// 127.0.0.1, bounded.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { boundRun } from "./lib/proc.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { pushScenario, pushTables, pushTargets } from "./lib/push/scenario.js";
import { targetsTable } from "./lib/report.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH_DIR, "results");
const HELP = `npm run bench:push -- [options]
  --quick              shorter slices and fewer rounds (~2 min instead of ~5)
  --concurrency <list> push.maxConcurrency = polled receives in flight (default 1,16,64)
  --out <file>         results file (default bench/results/push.json)`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    concurrency: { type: "string", default: "1,16,64" },
    out: { type: "string", default: join(RESULTS, "push.json") },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const levels = values.concurrency.split(",").map((s) => Number(s.trim()));
if (levels.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) {
  throw new Error("--concurrency: integers from 1 to 1000 (push.maxConcurrency's bounds)");
}

const log = elapsedLog();
const servers = await benchServers("vqs-bench-push-");
const { root, issuer } = servers;
// The whole run is bounded, and a signal cleans up the processes it started.
const endTimeLimit = boundRun(servers.cleanup, (values.quick ? 8 : 20) * 60_000, log);

try {
  await mkdir(RESULTS, { recursive: true });
  const { nats, gateway } = await servers.start({
    natsStore: join(root, "store"),
    natsLog: join(RESULTS, "nats-server.log"),
    logFile: join(RESULTS, "gateway-1.log"),
  });
  const nc = await connect({ servers: nats.url, name: "vqs-bench-push" });
  const client = createHttpClient([gateway.url]);
  const startedAt = new Date();
  const machine = await machineInfo(nats);
  log(
    `vqs bench:push (${values.quick ? "quick" : "full"}): ${machine.cores} cores (${machine.cpuModel}), ` +
      `Node ${machine.node}, nats-server ${machine.nats}`,
  );
  const result = await pushScenario(
    {
      api: new GatewayApi(client, issuer.token),
      gatewayPid: gateway.pid,
      js: jetstream(nc),
      jsm: await jetstreamManager(nc),
      logDir: RESULTS,
      log,
    },
    { quick: values.quick, levels },
  );
  client.close();
  await nc.close();
  const targets = pushTargets(result);
  const file = {
    tool: "vqs bench:push (bench/push.ts)",
    mode: values.quick ? "quick" : "full",
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    push: result,
    targets,
  };
  await mkdir(dirname(values.out), { recursive: true });
  await writeFile(values.out, JSON.stringify(file, null, 2) + "\n");
  process.stdout.write(
    [
      "",
      `vqs bench:push, ${file.mode} run, ${file.startedAt}: ${file.machine.cores} cores, Node ${file.machine.node}, nats-server ${file.machine.nats}`,
      "",
      pushTables(result),
      "",
      targetsTable(targets),
      "",
      `Results: ${relative(process.cwd(), values.out)}`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit();
  await servers.cleanup();
}

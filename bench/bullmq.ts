// `npm run bench:bullmq [-- --messages n --rounds n]`: the BullMQ comparison alone
// (bench/lib/bullmq/scenario.ts) on its own nats-server and gateway process: the gateway against
// the queue a Node team would self-host instead, BullMQ on Debian's redis-server (AOF, fsync
// every second; scripts/ensure-redis.mjs installs it). `npm run bench` runs it too. Never part
// of `npm test`; everything on 127.0.0.1, bounded.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { benchGatewayEnv, startGatewayProcess, type GatewayProcess } from "./lib/gateways.js";
import { bullmqScenario, bullmqTable } from "./lib/bullmq/scenario.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer } from "./lib/issuer.js";
import { startBenchNats, type BenchNats } from "./lib/nats-server.js";
import { boundRun } from "./lib/proc.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH_DIR, "results");
const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "20000" },
    rounds: { type: "string", default: "2" },
    out: { type: "string", default: join(RESULTS, "bullmq.json") },
  },
});
const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "vqs-bullmq-"));
  const issuer = await startBenchIssuer();
  let nats: BenchNats | null = null;
  let gateway: GatewayProcess | null = null;
  const cleanup = async () => {
    await gateway?.stop().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await issuer.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  };
  const endLimit = boundRun(cleanup, 20 * 60_000, log);
  try {
    await mkdir(RESULTS, { recursive: true });
    nats = await startBenchNats(join(root, "nats"), join(RESULTS, "nats-server.log"));
    gateway = await startGatewayProcess({
      env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE),
      logFile: join(RESULTS, "gateway-1.log"),
    });
    const client = createHttpClient("node", [gateway.url]);
    const result = await bullmqScenario(
      {
        api: new GatewayApi(client, issuer.token),
        gatewayUrl: gateway.url,
        gatewayPid: gateway.pid,
        natsPid: nats.pid,
        token: issuer.token,
        logDir: RESULTS,
        redisDir: join(root, "redis"),
        log,
      },
      { messages: Number(values.messages), rounds: Math.max(1, Number(values.rounds)) },
    );
    client.close();
    await writeFile(
      values.out,
      JSON.stringify({ tool: "vqs bench:bullmq (bench/bullmq.ts)", ...result }, null, 2) + "\n",
    );
    process.stdout.write(`\n${bullmqTable(result)}\n`);
  } finally {
    endLimit();
    await cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:bullmq failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

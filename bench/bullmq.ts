// `npm run bench:bullmq [-- --messages n --rounds n]`: the BullMQ comparison alone
// (bench/lib/bullmq/scenario.ts) on its own nats-server and gateway process: the gateway against
// the queue a Node team would self-host instead, BullMQ on Debian's redis-server (AOF, fsync
// every second; scripts/ensure-redis.mjs installs it). `npm run bench` runs it too. Never part
// of `npm test`; everything on 127.0.0.1, bounded.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { bullmqScenario, bullmqTable } from "./lib/bullmq/scenario.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { boundRun } from "./lib/proc.js";
import { benchServers } from "./lib/standalone.js";

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
  const servers = await benchServers("vqs-bullmq-");
  const { root, issuer } = servers;
  const endLimit = boundRun(servers.cleanup, 20 * 60_000, log);
  try {
    await mkdir(RESULTS, { recursive: true });
    const { nats, gateway } = await servers.start({
      natsStore: join(root, "nats"),
      natsLog: join(RESULTS, "nats-server.log"),
      logFile: join(RESULTS, "gateway-1.log"),
    });
    const client = createHttpClient([gateway.url]);
    const result = await bullmqScenario(
      {
        api: new GatewayApi(client, issuer.token),
        gatewayPid: gateway.pid,
        natsPid: nats.pid,
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
    await servers.cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:bullmq failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

// Process entry: config -> (embedded NATS, development auth) -> gateway -> listen -> shutdown.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, settingWarnings } from "./config.js";
import { DEV_AUDIENCE, DEV_DATA_DIR, DEV_ISSUER, devIssuer } from "./dev/dev-issuer.js";
import { startNatsServer, type NatsServerProcess } from "./dev/nats-server-process.js";
import { createGateway, type GatewayOptions } from "./gateway.js";
import { setHeapGrowing } from "./heap-growing.js";
import { createLogger } from "./logger.js";
import { shutDown } from "./shutdown.js";

async function main(): Promise<void> {
  // Development's one option (production reads only the environment): where the embedded
  // server's store and the development keys are kept.
  const dataDir =
    parseArgs({ options: { "data-dir": { type: "string" } } }).values["data-dir"] ?? DEV_DATA_DIR;
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  setHeapGrowing(config.heapGrowingPercent);
  const logger = createLogger(config.logLevel);
  for (const warning of settingWarnings(process.env)) logger.warn(warning);

  let embedded: NatsServerProcess | null = null;
  let servers = config.natsServers;
  if (!servers) {
    embedded = await startNatsServer({
      storeDir: join(dataDir, "nats"),
      serverName: "vqs-embedded",
    });
    servers = [embedded.url];
    logger.info(
      { url: embedded.url, storeDir: join(dataDir, "nats") },
      "started embedded nats-server",
    );
  }

  const options: GatewayOptions = { config, logger, natsServers: servers };
  const dev = config.oidc ? null : await devIssuer(dataDir);
  const gateway = await createGateway(
    dev
      ? {
          ...options,
          keys: dev.keys,
          issuers: [DEV_ISSUER],
          audiences: [DEV_AUDIENCE],
          receiptSecret: config.receiptSecret ?? dev.receiptSecret,
          devToken: () => dev.issue(),
        }
      : options,
  );
  const { url: address, metricsUrl } = await gateway.listen();
  logger.info({ address, metrics: metricsUrl, region: config.region }, "vqs gateway listening");

  if (dev) {
    const token = await dev.issue();
    const base = address.replace("0.0.0.0", "127.0.0.1");
    process.stdout.write(
      [
        "",
        "Development mode: tokens are signed by a local key (npm run token prints a fresh one).",
        `  export VQS_TOKEN=${token}`,
        `  curl -X POST ${base}/api/v3/topic/hello -H "Authorization: Bearer $VQS_TOKEN" --data-binary 'hi'`,
        `  curl -X POST ${base}/api/v3/topic/hello/consumer/workers -H "Authorization: Bearer $VQS_TOKEN" -H "Accept: application/x-ndjson"`,
        ...(config.console ? [`Web console: ${base}/console (it offers this token)`] : []),
        `Metrics (operators only, never the tenants): ${metricsUrl.replace("0.0.0.0", "127.0.0.1")}`,
        "",
      ].join("\n") + "\n",
    );
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      logger.error("shutdown grace period exceeded; exiting");
      process.exit(1);
    }, config.shutdownGraceSeconds * 1000);
    timer.unref();
    try {
      await shutDown(gateway, { delayMs: config.shutdownDelaySeconds * 1000, log: logger });
      await embedded?.stop();
    } finally {
      clearTimeout(timer);
    }
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `vqs failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

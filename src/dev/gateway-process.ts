// One gateway in its own process, for the benchmark and the nemesis tests: the production
// composition (createGateway) configured from the environment by loadConfig, listening on
// $HOST:$PORT (its metrics on $VQS_METRICS_PORT). Started by spawn-gateway.ts as `node --import tsx src/dev/gateway-process.ts`, so
// its CPU is measured apart from the load generator's, and it can be paused or killed alone.
// Talks to its parent over the IPC channel:
//   -> {type: "listening", url, metricsUrl}   once listening
//   <- {type: "stats"}  -> {type: "stats", memory, cpu}   (after a full GC with --expose-gc)
//   <- {type: "memory-now"} -> {type: "memory-now", memory}  (no GC: garbage included)
//   <- {type: "waiting"} -> {type: "waiting", waiting}     (waiting receives now; no GC)
//   <- {type: "stop"} or SIGTERM: closes the gateway and exits (a --cpu-prof profile is written)
// Exits by itself when the parent goes away.
// Its one argument, when given, is JSON of settings the environment does not give (fields of
// Config, such as {"consumerAckWaitSeconds": 5}): the tests' and the benchmark's way to shorten
// what production fixes (docs/testing.md). Production's entry, src/main.ts, takes none.
import { loadConfig, settingWarnings, type Config } from "../config.js";
import { createGateway } from "../gateway.js";
import { setHeapGrowing } from "../heap-growing.js";
import { createLogger } from "../logger.js";

const options = JSON.parse(process.argv[2] ?? "{}") as Partial<Config>;
const config: Config = { ...loadConfig(process.env), ...options };
if (!config.natsServers) throw new Error("gateway-process needs NATS_URL");
// As src/main.ts does: the benchmark measures the gateway as production runs it.
setHeapGrowing(config.heapGrowingPercent);
const logger = createLogger(config.logLevel);
for (const warning of settingWarnings(process.env)) logger.warn(warning);
const gateway = await createGateway({ config, logger, natsServers: config.natsServers });
const { url, metricsUrl } = await gateway.listen();

let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  // Bounded: a gateway that cannot close in 15 s is left behind by exiting anyway.
  setTimeout(() => process.exit(code === 0 ? 3 : code), 15_000).unref();
  try {
    await gateway.close();
  } catch (err) {
    logger.error({ err }, "bench gateway: close failed");
  }
  process.exit(code);
}

process.on("SIGTERM", () => void stop(0));
process.on("SIGINT", () => void stop(0));
process.on("disconnect", () => void stop(0));
process.on("message", (m: unknown) => {
  const type = (m as { type?: string } | null)?.type;
  if (type === "stop") void stop(0);
  if (type === "stats") {
    // With --expose-gc (as the benchmark starts it), memory is read after a full collection, so
    // it shows what is retained rather than garbage not yet collected.
    // Twice: V8 frees dead ArrayBuffers' memory on a background thread after a full GC, so right
    // after one `external`, `arrayBuffers` and RSS still count them (an idle gateway read 25-33
    // MiB of `external` so); the second collection first finishes the first one's freeing.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    process.send?.({ type: "stats", memory: process.memoryUsage(), cpu: process.cpuUsage() });
  }
  if (type === "memory-now") {
    process.send?.({ type: "memory-now", memory: process.memoryUsage() });
  }
  if (type === "waiting") {
    process.send?.({ type: "waiting", waiting: gateway.queue.waitingReceives });
  }
});
process.send?.({ type: "listening", url, metricsUrl });

// Starts a gateway in its own process (gateway-process.ts) and talks to it: its URL, its process
// ID (for CPU readings and signals), its heap statistics. Used by the benchmark and the nemesis.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import type { Config } from "../config.js";

const DEV_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(dirname(DEV_DIR));

export interface GatewayProcess {
  readonly url: string;
  /** Its Prometheus exposition (GET /metrics on the metrics port). */
  readonly metricsUrl: string;
  readonly pid: number;
  /** process.memoryUsage() of the gateway (rss, heapUsed, ...), or null without an answer. */
  memory(): Promise<NodeJS.MemoryUsage | null>;
  /** process.memoryUsage() as it is now, garbage included (no GC), or null without an answer. */
  memoryNow(): Promise<NodeJS.MemoryUsage | null>;
  /** Receives waiting (long polling) in the gateway now, or null without an answer. No GC. */
  waiting(): Promise<number | null>;
  /** SIGTERM (a graceful close), then SIGKILL after 20 s. */
  stop(): Promise<void>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: a stalled gateway that keeps its connections. */
  pause(): void;
  resume(): void;
}

export interface GatewayProcessOptions {
  readonly env: Record<string, string>;
  /** Settings the environment does not give (see gateway-process.ts), over loadConfig's. */
  readonly options?: Partial<Config>;
  /** Extra Node.js flags (e.g. --cpu-prof). */
  readonly nodeFlags?: readonly string[];
  /**
   * Run the compiled code as production does (`npm run build:bench` compiles it into
   * dist-bench/, since dist/ leaves out this process), instead of the
   * sources under tsx: tsx's transform keeps function names by wrapping every named function
   * and class it creates in a `__name` call, which costs the hot paths CPU production never pays.
   */
  readonly build?: boolean;
  /** The gateway's log (stdout and stderr) is appended here. */
  readonly logFile: string;
  /** A command the gateway runs under, e.g. `nsenter --net=...` (it must exec node). */
  readonly wrapper?: readonly string[];
}

export async function startGatewayProcess(o: GatewayProcessOptions): Promise<GatewayProcess> {
  const log = openSync(o.logFile, "a");
  const entry = o.build
    ? [join(REPO_DIR, "dist-bench", "dev", "gateway-process.js")]
    : ["--import", "tsx", join(DEV_DIR, "gateway-process.ts")];
  if (o.build && !existsSync(entry[0]!)) {
    throw new Error(`${entry[0]} is missing: run \`npm run build:bench\` first`);
  }
  const node = [process.execPath, "--expose-gc", ...(o.nodeFlags ?? []), ...entry];
  const argv = [...(o.wrapper ?? []), ...node, ...(o.options ? [JSON.stringify(o.options)] : [])];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    cwd: REPO_DIR,
    env: { ...process.env, ...o.env, NODE_ENV: "" },
    stdio: ["ignore", log, log, "ipc"],
  });
  closeSync(log); // the child has its own copy
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const { url, metricsUrl } = await new Promise<{ url: string; metricsUrl: string }>(
    (resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error("gateway process did not listen within 30 s"));
      }, 30_000);
      const onMessage = (m: unknown) => {
        const msg = m as { type?: string; url?: string; metricsUrl?: string };
        if (msg.type === "listening" && msg.url && msg.metricsUrl) {
          clearTimeout(timer);
          child.off("message", onMessage);
          resolve({ url: msg.url, metricsUrl: msg.metricsUrl });
        }
      };
      child.on("message", onMessage);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`gateway process exited (${String(code)}) before listening`));
      });
    },
  );
  return {
    url,
    metricsUrl,
    pid: child.pid ?? 0,
    memory: () => ask<NodeJS.MemoryUsage>(child, "stats", "memory"),
    memoryNow: () => ask<NodeJS.MemoryUsage>(child, "memory-now", "memory"),
    waiting: () => ask<number>(child, "waiting", "waiting"),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      await exited;
    },
    pause: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT"),
  };
}

/** Asks the gateway process over IPC; the answer's `field`, or null without one within 5 s. */
function ask<T>(child: ChildProcess, type: string, field: string): Promise<T | null> {
  return new Promise((resolve) => {
    if (!child.connected) return resolve(null);
    const timer = setTimeout(() => {
      child.off("message", onMessage);
      resolve(null);
    }, 5000);
    const onMessage = (m: unknown) => {
      const msg = m as Record<string, unknown>;
      if (msg.type !== type) return;
      clearTimeout(timer);
      child.off("message", onMessage);
      resolve((msg[field] as T | undefined) ?? null);
    };
    child.on("message", onMessage);
    child.send({ type });
  });
}

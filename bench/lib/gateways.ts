// Starts gateway processes (bench/gateway-process.ts) and talks to them: their URLs for the
// load generator's round-robin, their process IDs for CPU readings, and their heap statistics.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
const REPO_DIR = dirname(BENCH_DIR);

export interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  /** process.memoryUsage() of the gateway (rss, heapUsed, ...), or null without an answer. */
  memory(): Promise<NodeJS.MemoryUsage | null>;
  /** Receives waiting (long polling) in the gateway now, or null without an answer. No GC. */
  waiting(): Promise<number | null>;
  stop(): Promise<void>;
}

export interface GatewayProcessOptions {
  readonly env: Record<string, string>;
  /** Extra Node.js flags (e.g. --cpu-prof). */
  readonly nodeFlags?: readonly string[];
  /** The gateway's log (stdout and stderr) is appended here. */
  readonly logFile: string;
}

export async function startGatewayProcess(o: GatewayProcessOptions): Promise<GatewayProcess> {
  const log = openSync(o.logFile, "a");
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--expose-gc",
      ...(o.nodeFlags ?? []),
      "--import",
      "tsx",
      join(BENCH_DIR, "gateway-process.ts"),
    ],
    {
      cwd: REPO_DIR,
      env: { ...process.env, ...o.env, NODE_ENV: "" },
      stdio: ["ignore", log, log, "ipc"],
    },
  );
  closeSync(log); // the child has its own copy
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("gateway process did not listen within 30 s"));
    }, 30_000);
    const onMessage = (m: unknown) => {
      const msg = m as { type?: string; url?: string };
      if (msg.type === "listening" && msg.url) {
        clearTimeout(timer);
        child.off("message", onMessage);
        resolve(msg.url);
      }
    };
    child.on("message", onMessage);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway process exited (${String(code)}) before listening`));
    });
  });
  return {
    url,
    pid: child.pid ?? 0,
    memory() {
      return new Promise((resolve) => {
        if (!child.connected) return resolve(null);
        const timer = setTimeout(() => {
          child.off("message", onMessage);
          resolve(null);
        }, 5000);
        const onMessage = (m: unknown) => {
          const msg = m as { type?: string; memory?: NodeJS.MemoryUsage };
          if (msg.type !== "stats") return;
          clearTimeout(timer);
          child.off("message", onMessage);
          resolve(msg.memory ?? null);
        };
        child.on("message", onMessage);
        child.send({ type: "stats" });
      });
    },
    waiting() {
      return new Promise((resolve) => {
        if (!child.connected) return resolve(null);
        const timer = setTimeout(() => {
          child.off("message", onMessage);
          resolve(null);
        }, 5000);
        const onMessage = (m: unknown) => {
          const msg = m as { type?: string; waiting?: number };
          if (msg.type !== "waiting") return;
          clearTimeout(timer);
          child.off("message", onMessage);
          resolve(msg.waiting ?? null);
        };
        child.on("message", onMessage);
        child.send({ type: "waiting" });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The environment of a benchmark gateway against `natsUrl`, trusting the bench issuer. */
export function benchGatewayEnv(
  natsUrl: string,
  jwksUrl: string,
  issuer: string,
  audience: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PORT: "0",
    HOST: "127.0.0.1",
    NATS_URL: natsUrl,
    VQS_REGION: "bench1",
    VQS_OIDC_JWKS_URL: jwksUrl,
    VQS_OIDC_ISSUER: issuer,
    VQS_OIDC_AUDIENCE: audience,
    VQS_RECEIPT_SECRET: "bench-receipt-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    // The scale scenario makes 10,000 topics and 1,000 groups in one namespace: no caps here.
    VQS_MAX_TOPICS_PER_NAMESPACE: "0",
    VQS_MAX_GROUPS_PER_NAMESPACE: "0",
    ...extra,
  };
}

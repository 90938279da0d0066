// Starts and stops real nats-server processes on loopback: the embedded single node of
// `npm start` without NATS_URL, and every server the tests run (one node or a cluster).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface NatsServerOptions {
  readonly storeDir: string;
  /** Address to listen on for clients and routes (default 127.0.0.1). */
  readonly host?: string;
  readonly port?: number;
  readonly serverName?: string;
  /** Largest NATS message; the default leaves room for 1 MiB payloads plus headers. */
  readonly maxPayload?: number;
  readonly cluster?: {
    readonly name: string;
    readonly port: number;
    /** Other nodes' route ports on 127.0.0.1, or "host:port". */
    readonly routes: readonly (number | string)[];
  };
  /** fsync every write before acknowledging it (JetStream `sync_interval: always`, 2.10+). */
  readonly syncAlways?: boolean;
  /** JetStream's file store limit in bytes (default: the server's, from the free disk space). */
  readonly maxFileStore?: number;
  /** The binary to run (default: natsServerBinary()). */
  readonly bin?: string;
  /** A command the server runs under, e.g. `nsenter --net=...` (it must exec the server). */
  readonly wrapper?: readonly string[];
  /** The server's log (its stderr) is appended to this file. */
  readonly logFile?: string;
}

export interface NatsServerProcess {
  readonly url: string;
  readonly port: number;
  readonly options: NatsServerOptions;
  /** Graceful stop (SIGTERM), then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: a stalled server that still holds its connections. */
  pause(): void;
  resume(): void;
}

export const INSTALL_HINT =
  "nats-server is not installed. Install it with: sudo apt-get install -y nats-server " +
  "(Debian/Ubuntu), or see https://docs.nats.io/running-a-nats-service/introduction/installation";

/**
 * The nats-server binary: $NATS_SERVER_BIN; else the current release that `npm start` and
 * `npm test` fetch into .cache/ (scripts/ensure-current-nats.mjs), the server users run; else
 * the one on PATH (a distribution's package may be years old: 2.9.10 on Debian bookworm, still
 * supported, see docs/operations.md). null when there is none.
 */
export function natsServerBinary(): string | null {
  const configured = process.env.NATS_SERVER_BIN;
  if (configured) return configured;
  const fetched = fileURLToPath(new URL("../../.cache/nats-current/nats-server", import.meta.url));
  if (existsSync(fetched) && runs(fetched)) return fetched;
  return distributionNatsServerBinary();
}

/** The nats-server on PATH (the OS package), or null. */
export function distributionNatsServerBinary(): string | null {
  for (const candidate of ["nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"]) {
    if (runs(candidate)) return candidate;
  }
  return null;
}

function runs(bin: string): boolean {
  return spawnSync(bin, ["--version"], { encoding: "utf8" }).status === 0;
}

export function natsServerVersion(bin: string): string {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return (r.stdout || r.stderr).trim().replace(/^nats-server:\s*v?/, "");
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() =>
        typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port")),
      );
    });
  });
}

function configText(o: NatsServerOptions, port: number): string {
  const host = o.host ?? "127.0.0.1";
  const lines = [
    `listen: "${host}:${port}"`,
    `server_name: "${o.serverName ?? `vqs-${port}`}"`,
    `max_payload: ${o.maxPayload ?? 2 * 1024 * 1024}`,
    "jetstream {",
    `  store_dir: ${JSON.stringify(o.storeDir)}`,
    "  max_memory_store: 268435456",
    ...(o.syncAlways ? ["  sync_interval: always"] : []),
    ...(o.maxFileStore !== undefined ? [`  max_file_store: ${o.maxFileStore}`] : []),
    "}",
  ];
  if (o.cluster) {
    lines.push(
      "cluster {",
      `  name: "${o.cluster.name}"`,
      `  listen: "${host}:${o.cluster.port}"`,
      `  routes: [${o.cluster.routes.map((r) => `"nats-route://${typeof r === "number" ? `127.0.0.1:${r}` : r}"`).join(", ")}]`,
      "}",
    );
  }
  return lines.join("\n") + "\n";
}

export async function startNatsServer(options: NatsServerOptions): Promise<NatsServerProcess> {
  const bin = options.bin ?? natsServerBinary();
  if (!bin) throw new Error(INSTALL_HINT);
  const port = options.port ?? (await freePort());
  await mkdir(options.storeDir, { recursive: true });
  const confFile = join(options.storeDir, `nats-server-${port}.conf`);
  await writeFile(confFile, configText(options, port));

  const argv = [...(options.wrapper ?? []), bin, "-c", confFile];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  if (options.logFile) {
    const log = createWriteStream(options.logFile, { flags: "a" });
    child.stderr?.pipe(log);
  }
  await waitReady(child);

  const signal = async (sig: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(sig);
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    url: `nats://${options.host ?? "127.0.0.1"}:${port}`,
    port,
    options: { ...options, port },
    stop: (graceMs = 5000) => signal("SIGTERM", graceMs),
    kill: () => signal("SIGKILL", 0),
    pause: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT"),
  };
}

/**
 * Resolves with what the server logged once it says "Server is ready" (its stderr is left
 * flowing); rejects if it exits first or takes more than 20 s.
 */
export function waitReady(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`nats-server did not become ready in 20s:\n${log.slice(-2000)}`));
    }, 20_000);
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Server is ready")) {
        clearTimeout(timer);
        child.stderr?.off("data", onData);
        child.stderr?.resume();
        resolve(log);
      }
    };
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(
        new Error(`nats-server exited (${String(code)}) before it was ready:\n${log.slice(-2000)}`),
      );
    });
  });
}

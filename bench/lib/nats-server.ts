// The benchmark's one nats-server: file storage, loopback only, like the tests' servers (see
// src/dev/nats-server-process.ts), plus a loopback monitoring port so the run can read the
// server's version and memory (/varz), and the process ID for its CPU and disk writes.
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  INSTALL_HINT,
  natsServerBinary,
  natsServerVersion,
} from "../../src/dev/nats-server-process.js";

export interface BenchNats {
  readonly url: string;
  readonly pid: number;
  readonly version: string;
  readonly storeDir: string;
  /** The server's /varz (memory, CPU, connections), or null when it does not answer. */
  varz(): Promise<Record<string, unknown> | null>;
  /** The server's /jsz (streams, consumers, stored bytes), or null. */
  jsz(): Promise<Record<string, unknown> | null>;
  stop(): Promise<void>;
}

export async function startBenchNats(storeDir: string): Promise<BenchNats> {
  const bin = natsServerBinary();
  if (!bin) throw new Error(INSTALL_HINT);
  const port = await freePort();
  const monitor = await freePort();
  await mkdir(storeDir, { recursive: true });
  const conf = join(storeDir, "bench-nats.conf");
  await writeFile(
    conf,
    [
      `listen: "127.0.0.1:${port}"`,
      `http: "127.0.0.1:${monitor}"`,
      `server_name: "vqs-bench"`,
      `max_payload: ${2 * 1024 * 1024}`,
      "jetstream {",
      `  store_dir: ${JSON.stringify(join(storeDir, "js"))}`,
      "  max_memory_store: 268435456",
      "}",
    ].join("\n") + "\n",
  );
  const child = spawn(bin, ["-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`nats-server did not start in 20 s:\n${log.slice(-2000)}`));
    }, 20_000);
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Server is ready")) {
        clearTimeout(timer);
        child.stderr?.off("data", onData);
        child.stderr?.resume();
        resolve();
      }
    };
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${String(code)}):\n${log.slice(-2000)}`));
    });
  });
  const get = async (path: string) => {
    try {
      const res = await fetch(`http://127.0.0.1:${monitor}${path}`, {
        signal: AbortSignal.timeout(10_000),
      });
      return res.ok ? ((await res.json()) as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    pid: child.pid ?? 0,
    version: natsServerVersion(bin),
    storeDir,
    varz: () => get("/varz"),
    jsz: () => get("/jsz"),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

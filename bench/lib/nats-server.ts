// The benchmark's one nats-server: file storage, loopback only, like the tests' servers (see
// src/dev/nats-server-process.ts), plus a loopback monitoring port so the run can read the
// server's version and memory (/varz), and the process ID for its CPU and disk writes.
import { spawn } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  INSTALL_HINT,
  natsServerBinary,
  natsServerVersion,
  waitReady,
} from "../../src/dev/nats-server-process.js";
import { childStopper } from "./proc.js";

/** Open files the benchmark's nats-server may hold (if the system allows). */
const NOFILE = 1_048_576;

export interface BenchNats {
  readonly url: string;
  readonly pid: number;
  readonly version: string;
  readonly storeDir: string;
  readonly logFile: string;
  /** The server's open-files limit (its /proc limits), or null when unknown. */
  readonly maxOpenFiles: number | null;
  /** The server's /varz (memory, CPU, connections), or null when it does not answer. */
  varz(): Promise<Record<string, unknown> | null>;
  /** The server's /jsz (streams, consumers, stored bytes), or null. */
  jsz(): Promise<Record<string, unknown> | null>;
  /** Any monitoring endpoint with its query (e.g. `/connz?subs=1`), or null. */
  monitor(pathAndQuery: string): Promise<Record<string, unknown> | null>;
  stop(): Promise<void>;
}

/** Starts the server; its log goes to `logFile` (appended). */
export async function startBenchNats(storeDir: string, logFile: string): Promise<BenchNats> {
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
  // A file store holds open files per stream: the scale scenario's 10,000 streams need more than a
  // default shell's limit. Raise it as a production deployment would (containers get 1048576);
  // where that is not allowed, keep the hard limit. The limit used is reported.
  const child = spawn(
    "/bin/sh",
    [
      "-c",
      `ulimit -n ${NOFILE} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" -c "$1"`,
      bin,
      conf,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const stop = childStopper(child, 10_000);
  const startLog = await waitReady(child);
  const out = createWriteStream(logFile, { flags: "a" });
  out.write(startLog);
  child.stderr?.pipe(out);
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
    logFile,
    maxOpenFiles: openFilesLimit(child.pid ?? 0),
    varz: () => get("/varz"),
    jsz: () => get("/jsz"),
    monitor: (pathAndQuery) => get(pathAndQuery),
    stop,
  };
}

/** A process's open-files limit (its /proc limits), or null when unknown. */
export function openFilesLimit(pid: number | "self"): number | null {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// Starts the benchmark's plain push endpoint (bench/push-endpoint-process.ts) in its own process,
// and reads what they counted over IPC: pushes answered, the endpoint's clock when it read them
// (so a rate is over the endpoint's own time, not the IPC round trip's), and latency samples.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { childStopper } from "../proc.js";

const BENCH_DIR = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const REPO_DIR = dirname(BENCH_DIR);

export interface EndpointReading {
  /** The endpoint's wall clock when it read its counters, ms since the epoch. */
  readonly at: number;
  /** Pushes answered 2xx so far. */
  readonly ok: number;
  /** Pushes answered otherwise, or whose request failed. */
  readonly failed: number;
  /** Latencies (ms, send to handler) recorded since the last reading that took them. */
  readonly latencies: readonly number[];
}

export interface PushEndpoint {
  /** The URL to push to. */
  readonly url: string;
  readonly pid: number;
  read(takeLatencies?: boolean): Promise<EndpointReading>;
  stop(): Promise<void>;
}

export interface PushEndpointOptions {
  /** stdout and stderr of the endpoint are appended here. */
  readonly logFile: string;
}

const START_TIMEOUT_MS = 30_000;
const READ_TIMEOUT_MS = 5_000;

export async function startPushEndpoint(o: PushEndpointOptions): Promise<PushEndpoint> {
  const log = openSync(o.logFile, "a");
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", join(BENCH_DIR, "push-endpoint-process.ts")],
    { cwd: REPO_DIR, stdio: ["ignore", log, log, "ipc"] },
  );
  closeSync(log);
  const stop = childStopper(child, 5_000);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`push endpoint did not listen within 30 s`));
    }, START_TIMEOUT_MS);
    const onMessage = (m: unknown) => {
      const msg = m as { type?: string; url?: string };
      if (msg.type !== "listening" || !msg.url) return;
      clearTimeout(timer);
      child.off("message", onMessage);
      resolve(msg.url);
    };
    child.on("message", onMessage);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`push endpoint exited (${String(code)}) before listening`));
    });
  });
  let nextId = 0;
  return {
    url,
    pid: child.pid ?? 0,
    read(takeLatencies = false) {
      return new Promise((resolve, reject) => {
        if (!child.connected) return reject(new Error(`push endpoint is gone`));
        const id = ++nextId;
        const timer = setTimeout(() => {
          child.off("message", onMessage);
          reject(new Error(`push endpoint did not answer a read`));
        }, READ_TIMEOUT_MS);
        const onMessage = (m: unknown) => {
          const msg = m as Partial<EndpointReading> & { type?: string; id?: number };
          if (msg.type !== "read" || msg.id !== id) return;
          clearTimeout(timer);
          child.off("message", onMessage);
          resolve({
            at: msg.at ?? NaN,
            ok: msg.ok ?? 0,
            failed: msg.failed ?? 0,
            latencies: msg.latencies ?? [],
          });
        };
        child.on("message", onMessage);
        child.send({ type: "read", id, takeLatencies });
      });
    },
    stop,
  };
}

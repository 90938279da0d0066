// The parent's handle on bench:large's small publisher (bench/large-publisher-process.ts): a
// process of its own, so the latency it times holds the gateway's wait and not the load
// generator's (the large uploads' client work runs in the parent).
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunRequest, RunResult } from "../../large-publisher-process.js";
import { Recorder } from "../stats.js";

const BENCH_DIR = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const START_TIMEOUT_MS = 30_000;

export interface SmallPublisher {
  readonly pid: number;
  /** `rate` publishes of 1 KiB a second for `seconds` to `topic` at `url`. */
  run(
    url: string,
    token: string,
    topic: string,
    rate: number,
    seconds: number,
  ): Promise<{ recorder: Recorder; eventLoopDelayP99Ms: number }>;
  stop(): Promise<void>;
}

export async function startSmallPublisher(): Promise<SmallPublisher> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", join(BENCH_DIR, "large-publisher-process.ts")],
    { cwd: dirname(BENCH_DIR), stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the small publisher did not start within 30 s"));
    }, START_TIMEOUT_MS);
    child.once("message", () => {
      clearTimeout(timer);
      resolve();
    });
    child.once("exit", (code) => reject(new Error(`the small publisher exited (${code})`)));
  });
  let nextId = 0;
  return {
    pid: child.pid ?? 0,
    run(url, token, topic, rate, seconds) {
      const id = ++nextId;
      const request: RunRequest = { type: "run", id, url, token, topic, rate, seconds };
      return new Promise((resolve, reject) => {
        const onExit = (code: number | null) =>
          reject(new Error(`the small publisher exited (${code})`));
        const onMessage = (m: RunResult) => {
          if (m.type !== "done" || m.id !== id) return;
          child.off("message", onMessage);
          child.off("exit", onExit);
          const recorder = new Recorder();
          for (const s of m.samples) recorder.record(s);
          for (const [kind, n] of Object.entries(m.errorKinds)) {
            for (let i = 0; i < n; i++) recorder.error(kind);
          }
          resolve({ recorder, eventLoopDelayP99Ms: m.eventLoopDelayP99Ms });
        };
        child.on("message", onMessage);
        child.once("exit", onExit);
        child.send(request);
      });
    },
    async stop() {
      if (child.exitCode === null) child.disconnect();
      await exited;
    },
  };
}

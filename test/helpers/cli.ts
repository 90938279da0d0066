// The `vqs` command-line tool as a user runs it: a spawned process, its exit code and its output.
// The tool runs as plain JavaScript, as the installed one does: its source bundled once per test
// file by esbuild (the transform tsx applies too), its packages left to node_modules. Each run
// through tsx's loader took 5–7 s on the loaded 2-core machine, the bundle 1–3 s.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

export const CLI_MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
// Two folders below the root as src/cli/ is: the tool reads ../../package.json from where it
// runs, and its packages resolve from the root's node_modules. One per test process, built at
// its first run; those of processes no longer running (a worker ended without its exit
// handlers) are removed then.
const CLI_BUNDLE = fileURLToPath(
  new URL(`../../.cache/cli/main-${process.pid}.mjs`, import.meta.url),
);
let built = false;

/** Whether a process of this id is running. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function removeStaleBundles(): void {
  let names: string[] = [];
  try {
    names = readdirSync(dirname(CLI_BUNDLE));
  } catch {
    return; // none built yet
  }
  for (const name of names) {
    const pid = Number(/^main-(\d+)\.mjs$/.exec(name)?.[1] ?? NaN);
    if (Number.isInteger(pid) && !running(pid)) {
      rmSync(join(dirname(CLI_BUNDLE), name), { force: true });
    }
  }
}

function cliBundle(): string {
  if (!built) {
    removeStaleBundles();
    buildSync({
      entryPoints: [CLI_MAIN],
      outfile: CLI_BUNDLE,
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      logLevel: "warning",
    });
    built = true;
    process.once("exit", () => rmSync(CLI_BUNDLE, { force: true }));
  }
  return CLI_BUNDLE;
}

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `vqs <args>`; `env` is added to a clean environment (PATH, HOME and nothing of the
 * test's own VQS_* settings), so only what a test passes reaches the tool.
 */
export function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string | Uint8Array } = {},
): Promise<CliRun> {
  return startCli(args, options).done;
}

/** A running `vqs <args>`: its output so far, signals to send, and its end. */
export interface CliProcess {
  readonly child: ChildProcess;
  /** What it printed so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves once its output so far satisfies `ok` (rejects after `ms`, or if it ended first). */
  until(ok: (o: { stdout: string; stderr: string }) => boolean, ms?: number): Promise<void>;
  readonly done: Promise<CliRun>;
}

/** Starts `vqs <args>` (as runCli does) without waiting for it; killed after `killAfterMs`. */
export function startCli(
  args: readonly string[],
  {
    cwd = process.cwd(),
    env = {},
    killAfterMs = 30_000,
    input,
  }: {
    cwd?: string;
    env?: Record<string, string>;
    killAfterMs?: number;
    /** Written to its stdin, which then ends (without it, stdin is empty). */
    input?: string | Uint8Array;
  } = {},
): CliProcess {
  const child = spawn(process.execPath, [cliBundle(), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  if (input !== undefined) child.stdin?.end(input);
  let stdout = "";
  let stderr = "";
  let ended = false;
  const watchers = new Set<() => void>();
  const changed = () => watchers.forEach((w) => w());
  child.stdout!.on("data", (c: Buffer) => ((stdout += c.toString()), changed()));
  child.stderr!.on("data", (c: Buffer) => ((stderr += c.toString()), changed()));
  const done = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      ended = true;
      changed();
      resolve({ code, stdout, stderr });
    });
  });
  const output = () => ({ stdout, stderr });
  const until = (ok: (o: { stdout: string; stderr: string }) => boolean, ms = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (ok(output())) finish(null);
        else if (ended) finish(new Error(`ended first: ${JSON.stringify(output())}`));
      };
      const timer = setTimeout(
        () => finish(new Error(`not within ${ms} ms: ${JSON.stringify(output())}`)),
        ms,
      );
      const finish = (err: Error | null) => {
        clearTimeout(timer);
        watchers.delete(check);
        if (err) reject(err);
        else resolve();
      };
      watchers.add(check);
      check();
    });
  return { child, output, until, done };
}

// The `vqs` command-line tool as a user runs it: a spawned process (from source, through tsx),
// its exit code and its output.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const CLI_MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
/** tsx's loader by absolute URL, so the tool runs from any working directory. */
const TSX = import.meta.resolve("tsx");

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
  { cwd = process.cwd(), env = {} }: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", TSX, CLI_MAIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

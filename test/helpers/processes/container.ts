// Container tooling for the image test: the tools' installer and the local Node base (both in
// scripts/), and podman/buildah calls on the base's own container storage, each with a time limit
// and its output kept for the failure message.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs a command to its end (SIGKILL after `timeoutMs`); never throws for a non-zero exit. */
export function exec(
  cmd: string,
  args: readonly string[],
  { timeoutMs = 120_000, echo = false }: { timeoutMs?: number; echo?: boolean } = {},
): Promise<Result> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      if (echo) process.stderr.write(c);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Like exec, but a non-zero exit throws with the command and the end of its output. */
export async function check(
  cmd: string,
  args: readonly string[],
  opts?: { timeoutMs?: number; echo?: boolean },
): Promise<Result> {
  const r = await exec(cmd, args, opts);
  if (r.code !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split("\n").slice(-40).join("\n");
    throw new Error(`${cmd} ${args.join(" ")} exited ${String(r.code)}:\n${tail}`);
  }
  return r;
}

/**
 * Why the container test cannot run here, or null when it can: runs
 * scripts/ensure-container-tools.mjs, which installs the tools as root on Debian and exits 3
 * (with the command to run) where that is impossible. A failed install is no reason to skip:
 * it is returned as null and the test fails on the missing tool.
 */
export function containerSkipReason(): string | null {
  const r = spawnSync(process.execPath, ["scripts/ensure-container-tools.mjs"], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "inherit", "pipe"],
  });
  if (r.status === 3) return r.stderr.trim();
  if (r.stderr) process.stderr.write(r.stderr);
  return null;
}

export interface ContainerBase {
  /** The local equivalent of the Dockerfile's default NODE_IMAGE. */
  readonly image: string;
  /** --root/--runroot/--storage-driver: podman and buildah on the base's container storage. */
  readonly storageArgs: readonly string[];
}

/** scripts/container-base.mjs: the cached base image, assembled first when it is missing. */
export async function containerBase(): Promise<ContainerBase> {
  const r = await check("nice", ["-n", "10", process.execPath, "scripts/container-base.mjs"], {
    timeoutMs: 600_000,
    echo: true,
  });
  return JSON.parse(r.stdout.trim().split("\n").pop() ?? "") as ContainerBase;
}

export function podman(base: ContainerBase, args: readonly string[], timeoutMs = 60_000) {
  return check("podman", [...base.storageArgs, ...args], { timeoutMs });
}

// A throwaway PostgreSQL cluster for a test file: initdb in a temp directory, a random loopback
// port, trust authentication, fsync off (nothing outlives the test). Run as the `postgres` user
// when the tests run as root (postgres refuses root). The binaries come from the distribution's
// package, which `scripts/ensure-postgres.mjs` (npm test's pretest) installs.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../../src/dev/nats-server-process.js";

const ENSURE = fileURLToPath(new URL("../../../scripts/ensure-postgres.mjs", import.meta.url));

export interface TestPostgres {
  /** `postgres://world@127.0.0.1:<port>/postgres` */
  readonly url: string;
  /** The server's process ID (its backends are its children). */
  readonly pid: number;
  /** Creates a database in the cluster and returns its URL. */
  createDatabase(name: string): string;
  dispose(): Promise<void>;
}

/** uid/gid of the `postgres` user when running as root (postgres will not run as root). */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync("id", [flag, "postgres"], { encoding: "utf8" });
  const uid = id("-u");
  const gid = id("-g");
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error("running as root, but there is no `postgres` user to run PostgreSQL as");
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: "127.0.0.1", port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const found = spawnSync(process.execPath, [ENSURE, "--print"], { encoding: "utf8" });
  if (found.status !== 0) {
    throw new Error(
      `PostgreSQL's server binaries are missing (${found.stderr.trim()}): run ` +
        "`node scripts/ensure-postgres.mjs` as root, or set POSTGRES_BIN_DIR",
    );
  }
  const bin = found.stdout.trim();
  const dir = await mkdtemp(join(tmpdir(), "vqs-pg-"));
  const user = runAs();
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  const init = spawnSync(
    join(bin, "initdb"),
    ["-D", data, "-U", "world", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
    { encoding: "utf8", ...(user ?? {}) },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    join(bin, "postgres"),
    [
      ...["-D", data, "-p", String(port), "-k", dir],
      ...["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"],
      ...["-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    ],
    { stdio: ["ignore", "ignore", "pipe"], ...(user ?? {}) },
  );
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const deadline = Date.now() + 30_000;
  while (!(await reachable(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`postgres did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const base = `postgres://world@127.0.0.1:${port}`;
  return {
    url: `${base}/postgres`,
    pid: child.pid!,
    createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      const r = spawnSync(
        join(bin, "psql"),
        ["-h", "127.0.0.1", "-p", String(port), "-U", "world", "-d", "postgres"],
        { input: `CREATE DATABASE ${name};`, encoding: "utf8" },
      );
      if (r.status !== 0) throw new Error(`CREATE DATABASE ${name}: ${r.stderr}`);
      return `${base}/${name}`;
    },
    async dispose() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGINT"); // fast shutdown
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

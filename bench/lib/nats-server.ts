// The benchmark's nats-server: file storage, loopback only, like the tests' servers (see
// src/dev/nats-server-process.ts), plus a loopback monitoring port so the run can read the
// server's version and memory (/varz), and the process ID for its CPU and disk writes; or a
// cluster of them (startBenchNodes), routed on loopback, once its meta leader is elected.
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

/** A node's place in a cluster: its name, its route port and the other nodes' route ports. */
export interface BenchClusterNode {
  readonly name: string;
  readonly port: number;
  readonly routes: readonly number[];
}

/** Starts the server; its log goes to `logFile` (appended). */
export async function startBenchNats(
  storeDir: string,
  logFile: string,
  node?: BenchClusterNode,
): Promise<BenchNats> {
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
      `server_name: "${node?.name ?? "vqs-bench"}"`,
      `max_payload: ${2 * 1024 * 1024}`,
      "jetstream {",
      `  store_dir: ${JSON.stringify(join(storeDir, "js"))}`,
      "  max_memory_store: 268435456",
      "}",
      ...(node
        ? [
            "cluster {",
            `  name: "vqs-bench"`,
            `  listen: "127.0.0.1:${node.port}"`,
            `  routes: [${node.routes.map((r) => `"nats-route://127.0.0.1:${r}"`).join(", ")}]`,
            "}",
          ]
        : []),
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

/**
 * `count` servers: one as startBenchNats, or a cluster (stores `<storeDir>/n<i>`, logs
 * `<logFile less .log>-<i>.log`) returned once every node names the same meta leader.
 */
export async function startBenchNodes(
  storeDir: string,
  logFile: string,
  count: number,
): Promise<BenchNats[]> {
  if (count === 1) return [await startBenchNats(storeDir, logFile)];
  const routes: number[] = [];
  for (let i = 0; i < count; i++) routes.push(await freePort());
  const nodes = await Promise.all(
    routes.map((port, i) =>
      startBenchNats(join(storeDir, `n${i}`), logFile.replace(/(\.log)?$/, `-${i + 1}.log`), {
        name: `vqs-bench-n${i}`,
        port,
        routes: routes.filter((r) => r !== port),
      }),
    ),
  );
  const leaderOf = async (n: BenchNats) =>
    ((await n.jsz())?.meta_cluster as { leader?: string } | undefined)?.leader ?? "";
  for (let i = 0; i < 300; i++) {
    const leaders = await Promise.all(nodes.map(leaderOf));
    if (leaders[0] && leaders.every((l) => l === leaders[0])) return nodes;
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(nodes.map((n) => n.stop()));
  throw new Error(`the ${count}-node cluster elected no meta leader within 30 s`);
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

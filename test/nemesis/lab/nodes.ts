// The nemesis's JetStream cluster: three nats-server nodes, each in its own namespace of the lab
// (its own address, ports 4222/6222) with its store on its own size-limited disk, fsyncing every
// write where the server can (`sync_interval: always`, 2.10+). Nodes can be killed and restarted,
// paused and resumed, and asked who leads a stream, also through chosen nodes only (during a
// partition, the majority side's view).
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { join } from "node:path";
import {
  natsServerVersion,
  startNatsServer,
  type NatsServerOptions,
  type NatsServerProcess,
} from "../../../src/dev/nats-server-process.js";
import { mountDisk, unmountDisk, type Disk } from "./disks.js";
import type { Lab } from "./lab.js";

export const NODE_HOSTS = ["n0", "n1", "n2"] as const;
const CLIENT_PORT = 4222;
const ROUTE_PORT = 6222;

export interface NemesisNodes {
  readonly version: string;
  readonly nodes: NatsServerProcess[];
  readonly disks: readonly Disk[];
  /** Every node's client URL. */
  readonly urls: readonly string[];
  kill(i: number): Promise<void>;
  restart(i: number): Promise<void>;
  pause(i: number): void;
  resume(i: number): void;
  /** The node leading a stream, asked through `via` (default: every node); null when none. */
  streamLeader(stream: string, via?: readonly number[]): Promise<number | null>;
  dispose(): Promise<void>;
}

export interface NodesOptions {
  readonly bin: string;
  readonly dir: string;
  readonly diskBytes: number;
}

export function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split(".").map((x) => Number.parseInt(x, 10));
  return a > major || (a === major && b >= minor);
}

export async function startNodes(lab: Lab, o: NodesOptions): Promise<NemesisNodes> {
  const version = natsServerVersion(o.bin);
  const disks: Disk[] = [];
  for (const host of NODE_HOSTS) {
    disks.push(await mountDisk(lab, join(o.dir, host, "store"), o.diskBytes));
  }
  const options = NODE_HOSTS.map((host, i): NatsServerOptions => ({
    storeDir: disks[i]!.path,
    host: lab.address(host),
    port: CLIENT_PORT,
    serverName: host,
    cluster: {
      name: "vqs-nemesis",
      port: ROUTE_PORT,
      routes: NODE_HOSTS.filter((h) => h !== host).map((h) => `${lab.address(h)}:${ROUTE_PORT}`),
    },
    bin: o.bin,
    syncAlways: versionAtLeast(version, 2, 10),
    // Above the disk's size: the file system fills before JetStream's own accounting says no.
    maxFileStore: o.diskBytes * 4,
    wrapper: lab.wrapper(host),
    logFile: join(o.dir, host, "nats-server.log"),
  }));
  const nodes = await Promise.all(options.map((opts) => startNatsServer(opts)));
  const urls = nodes.map((n) => n.url);
  const ask = async (via: readonly number[], stream: string): Promise<number | null> => {
    const nc = await connect({ servers: via.map((i) => urls[i]!), timeout: 3000 });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 3000 });
      const leader = (await jsm.streams.info(stream)).cluster?.leader;
      const i = NODE_HOSTS.findIndex((h) => h === leader);
      return i >= 0 ? i : null;
    } finally {
      await nc.close();
    }
  };
  return {
    version,
    nodes,
    disks,
    urls,
    kill: (i) => nodes[i]!.kill(),
    async restart(i) {
      nodes[i] = await startNatsServer(options[i]!);
    },
    pause: (i) => nodes[i]!.pause(),
    resume: (i) => nodes[i]!.resume(),
    streamLeader: (stream, via = [0, 1, 2]) => ask(via, stream).catch(() => null),
    async dispose() {
      for (const n of nodes) n.resume();
      await Promise.all(nodes.map((n) => n.stop(2000)));
      for (const d of disks) await unmountDisk(d);
    },
  };
}

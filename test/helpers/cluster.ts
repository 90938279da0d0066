// A JetStream cluster of real nats-server processes on loopback (random client and route ports,
// one temporary store directory per node), for fault tests: nodes can be killed and restarted,
// paused and resumed, and asked who leads a stream.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  freePort,
  startNatsServer,
  type NatsServerOptions,
  type NatsServerProcess,
} from "../../src/dev/nats-server-process.js";

export interface TestCluster {
  /** The nodes; an entry is replaced when its node is restarted. */
  readonly nodes: NatsServerProcess[];
  /** Every node's client URL, comma-separated (what NATS_URL takes). */
  readonly url: string;
  /** The node a stream's leader runs on (by server name), or null while there is none. */
  streamLeader(stream: string): Promise<number | null>;
  /** SIGKILL of node i; `restart` starts it again on the same ports and store. */
  kill(i: number): Promise<void>;
  restart(i: number): Promise<void>;
  /** Stops every node and removes the stores. */
  dispose(): Promise<void>;
}

export interface TestClusterOptions {
  readonly size?: number;
  readonly bin?: string;
  readonly syncAlways?: boolean;
}

export async function startTestCluster(o: TestClusterOptions = {}): Promise<TestCluster> {
  const size = o.size ?? 3;
  const dir = await mkdtemp(join(tmpdir(), "vqs-cluster-"));
  const routes: number[] = [];
  const ports: number[] = [];
  for (let i = 0; i < size; i++) {
    routes.push(await freePort());
    ports.push(await freePort());
  }
  const options = routes.map((port, i): NatsServerOptions => ({
    storeDir: join(dir, `n${i}`),
    serverName: `n${i}`,
    port: ports[i]!,
    cluster: { name: "vqs-test", port, routes: routes.filter((p) => p !== port) },
    ...(o.bin ? { bin: o.bin } : {}),
    ...(o.syncAlways ? { syncAlways: true } : {}),
  }));
  const nodes = await Promise.all(options.map((opts) => startNatsServer(opts)));
  const url = nodes.map((n) => n.url).join(",");
  return {
    nodes,
    url,
    async streamLeader(stream) {
      const nc = await connect({ servers: nodes.map((n) => n.url), timeout: 5000 });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 5000 });
        const leader = (await jsm.streams.info(stream)).cluster?.leader;
        const i = options.findIndex((x) => x.serverName === leader);
        return i >= 0 ? i : null;
      } finally {
        await nc.close();
      }
    },
    kill: (i) => nodes[i]!.kill(),
    async restart(i) {
      nodes[i] = await startNatsServer(options[i]!);
    },
    async dispose() {
      await Promise.all(nodes.map((n) => n.stop()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

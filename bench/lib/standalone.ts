// What a standalone benchmark script (bench:push, bench:floor, bench:bullmq) starts around its
// scenario: a temporary directory, the JWKS issuer, then a nats-server and one gateway process,
// and the clean-up that stops whatever of them started and removes the directory.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchGatewayEnv, startGatewayProcess, type GatewayProcess } from "./gateways.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer, type BenchIssuer } from "./issuer.js";
import { startBenchNats, type BenchNats } from "./nats-server.js";

export interface BenchServers {
  readonly root: string;
  readonly issuer: BenchIssuer;
  nats: BenchNats | null;
  gateway: GatewayProcess | null;
  /** The nats-server (file store in `natsStore`), then the gateway trusting the issuer. */
  readonly start: (o: {
    readonly natsStore: string;
    readonly natsLog: string;
    readonly gatewayLog: string;
    readonly nodeFlags?: readonly string[];
    /** The gateway from the compiled build (what production runs), not the sources under tsx. */
    readonly build?: boolean;
  }) => Promise<{ nats: BenchNats; gateway: GatewayProcess }>;
  readonly cleanup: () => Promise<void>;
}

export async function benchServers(prefix: string): Promise<BenchServers> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const issuer = await startBenchIssuer();
  const s: BenchServers = {
    root,
    issuer,
    nats: null,
    gateway: null,
    start: async (o) => {
      const nats = (s.nats = await startBenchNats(o.natsStore, o.natsLog));
      const gateway = (s.gateway = await startGatewayProcess({
        env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE),
        nodeFlags: o.nodeFlags ?? [],
        build: o.build ?? false,
        logFile: o.gatewayLog,
      }));
      return { nats, gateway };
    },
    cleanup: async () => {
      await s.gateway?.stop().catch(() => undefined);
      await s.nats?.stop().catch(() => undefined);
      await issuer.close().catch(() => undefined);
      await rm(root, { recursive: true, force: true }).catch(() => undefined);
    },
  };
  return s;
}

/** A progress line on stderr with the seconds since the script started. */
export function elapsedLog(): (line: string) => void {
  const started = performance.now();
  return (line) =>
    process.stderr.write(
      `[${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`,
    );
}

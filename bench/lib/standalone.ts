// What a benchmark script starts around its scenarios: a temporary directory, the JWKS issuer,
// then a nats-server and gateway processes, and the clean-up that stops whatever of them started
// (and whatever else the script registered) and removes the directory; plus the progress log and
// the machine's description every results file carries.
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, cpus, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import {
  benchGatewayEnv,
  benchGatewaySettings,
  startGatewayProcess,
  type GatewayProcess,
} from "./gateways.js";
import { AUDIENCE, ISSUER, startIssuer } from "../../test/helpers/issuer.js";
import { startBenchNodes, type BenchNats } from "./nats-server.js";
import { loadAverage } from "./proc.js";
import { round } from "./stats.js";

export interface GatewayStart {
  readonly logFile: string;
  readonly nodeFlags?: readonly string[];
  /** The gateway from the compiled build (what production runs), not the sources under tsx. */
  readonly build?: boolean;
  /** Variables on top of the benchmark gateway's environment (camelCase keys: fixed values). */
  readonly env?: Record<string, string>;
  /** The service's default limits instead of the bench's uncapped namespaces and tenants. */
  readonly defaultLimits?: boolean;
}

export interface BenchServers {
  readonly root: string;
  readonly issuer: BenchIssuer;
  /** The (first) nats-server, and every node of a cluster. */
  nats: BenchNats | null;
  natsNodes: readonly BenchNats[];
  gateway: GatewayProcess | null;
  /**
   * The nats-server (file store in `natsStore`), or a cluster of `natsNodes` (startBenchNodes),
   * then the gateway trusting the issuer.
   */
  readonly start: (
    o: GatewayStart & {
      readonly natsStore: string;
      readonly natsLog: string;
      readonly natsNodes?: number;
    },
  ) => Promise<{ nats: BenchNats; gateway: GatewayProcess }>;
  /** Another gateway on the started nats-server; the clean-up stops it if the caller did not. */
  readonly startGateway: (o: GatewayStart) => Promise<GatewayProcess>;
  /** Something else the clean-up closes (before the gateways and the nats-server). */
  readonly onCleanup: (close: () => unknown) => void;
  readonly cleanup: () => Promise<void>;
}

/** The tests' JWKS issuer on loopback, one long-lived token, and tokens for other namespaces. */
export interface BenchIssuer {
  readonly jwksUrl: string;
  readonly token: string;
  sign(claims: Record<string, unknown>, expiresIn?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startBenchIssuer(): Promise<BenchIssuer> {
  const issuer = await startIssuer();
  const sign = (claims: Record<string, unknown>, expiresIn = "6h") =>
    issuer.token(claims, { expiresIn });
  return { jwksUrl: issuer.jwksUrl, token: await sign({}), sign, close: () => issuer.close() };
}

export async function benchServers(prefix: string): Promise<BenchServers> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const issuer = await startBenchIssuer();
  const gateways: GatewayProcess[] = [];
  const closers: (() => unknown)[] = [];
  const s: BenchServers = {
    root,
    issuer,
    nats: null,
    natsNodes: [],
    gateway: null,
    start: async (o) => {
      s.natsNodes = await startBenchNodes(o.natsStore, o.natsLog, o.natsNodes ?? 1);
      const nats = (s.nats = s.natsNodes[0]!);
      const gateway = (s.gateway = await s.startGateway(o));
      return { nats, gateway };
    },
    startGateway: async (o) => {
      if (!s.nats) throw new Error("startGateway: no nats-server started");
      // Upper-case keys are environment variables, the others the gateway's fixed values.
      const settings = benchGatewaySettings(o.env ?? {});
      const gateway = await startGatewayProcess({
        env: benchGatewayEnv(
          s.natsNodes.map((n) => n.url).join(","),
          issuer.jwksUrl,
          ISSUER,
          AUDIENCE,
          settings.env,
          !o.defaultLimits,
        ),
        options: settings.options,
        nodeFlags: o.nodeFlags ?? [],
        build: o.build ?? false,
        logFile: o.logFile,
      });
      gateways.push(gateway);
      return gateway;
    },
    onCleanup: (close) => void closers.push(close),
    cleanup: async () => {
      for (const close of closers.splice(0).reverse()) {
        await Promise.resolve()
          .then(close)
          .catch(() => undefined);
      }
      await Promise.all(gateways.splice(0).map((g) => g.stop().catch(() => undefined)));
      await Promise.all(s.natsNodes.map((n) => n.stop().catch(() => undefined)));
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

/** The machine a run measured on, as every results file records it. */
export async function machineInfo(nats: BenchNats) {
  const varz = await nats.varz();
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGB: round(totalmem() / 1024 ** 3, 1),
    kernel: release(),
    node: process.version,
    nats: (typeof varz?.version === "string" ? varz.version : null) ?? nats.version,
    natsGo: typeof varz?.go === "string" ? varz.go : null,
    storage: `file store under ${tmpdir()}`,
    natsMaxOpenFiles: nats.maxOpenFiles,
    loadAverageAtStart: loadAverage(),
  };
}

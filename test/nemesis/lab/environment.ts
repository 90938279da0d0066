// Everything a nemesis run needs, started once and shared by its rounds: the lab network, three
// nats-server nodes, a token issuer on the bridge's address, and two gateway processes (which may
// push to the bridge's address, where each round's push endpoint listens).
import { join } from "node:path";
import type { Config } from "../../../src/config.js";
import { AUDIENCE, ISSUER, startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { GATEWAY_HOSTS, startGateways, type NemesisGateway } from "./gateways.js";
import { createLab, type Lab } from "./lab.js";
import { NODE_HOSTS, startNodes, type NemesisNodes } from "./nodes.js";

export interface NemesisEnvironment {
  readonly dir: string;
  readonly lab: Lab;
  readonly nodes: NemesisNodes;
  readonly gateways: readonly NemesisGateway[];
  readonly issuer: TestIssuer;
  /** A token the skew of a gateway's clock by minutes does not invalidate (4 h). */
  readonly token: string;
  dispose(): Promise<void>;
}

export interface EnvironmentOptions {
  /** The nats-server binary. */
  readonly bin: string;
  readonly dir: string;
  /** Each node's store size (the disk the disk-full fault fills). */
  readonly diskBytes?: number;
  /** Gateway settings on top of the nemesis defaults. */
  readonly gatewayEnv?: Record<string, string>;
}

/**
 * R3 streams; NATS requests bounded at 2 s; the consumers' ack wait at 5 s, so that leases which
 * fall back to it after a consumer-leader failover come back within the drain (as in
 * test/faults/cluster-faults.test.ts).
 */
export const NEMESIS_GATEWAY_ENV: Record<string, string> = {
  VQS_STREAM_REPLICAS: "3",
  // The large-body store's byte limit must fit the nodes' JetStream storage (2 GiB here, 4x the
  // 512 MiB disks): at the 10 GiB default no node can place the store, and every large publish
  // is refused (503).
  VQS_LARGE_BODY_STORE_BYTES: String(256 * 1024 * 1024),
};

/** What production fixes, shortened as above (passed to each gateway process in its argument). */
export const NEMESIS_GATEWAY_OPTIONS: Partial<Config> = {
  requestTimeoutMs: 2000,
  consumerAckWaitSeconds: 5,
};

export async function startEnvironment(o: EnvironmentOptions): Promise<NemesisEnvironment> {
  const lab = await createLab([...NODE_HOSTS, ...GATEWAY_HOSTS]);
  let nodes: NemesisNodes | null = null;
  let issuer: TestIssuer | null = null;
  const gateways: NemesisGateway[] = [];
  try {
    nodes = await startNodes(lab, {
      bin: o.bin,
      dir: o.dir,
      diskBytes: o.diskBytes ?? 512 * 1024 * 1024,
    });
    issuer = await startIssuer({ host: lab.hostAddress });
    // A gateway waits for JetStream at start; the new cluster elects its meta leader first.
    for (let attempt = 0; gateways.length === 0; attempt++) {
      try {
        gateways.push(
          ...(await startGateways(lab, {
            dir: join(o.dir),
            natsUrls: nodes.urls,
            jwksUrl: issuer.jwksUrl,
            issuer: ISSUER,
            audience: AUDIENCE,
            env: {
              ...NEMESIS_GATEWAY_ENV,
              // The push endpoint listens on the bridge too (any port).
              VQS_PUSH_ALLOWED_URLS: `http://${lab.hostAddress}:*`,
              ...o.gatewayEnv,
            },
            options: NEMESIS_GATEWAY_OPTIONS,
          })),
        );
      } catch (err) {
        if (attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    const token = await issuer.token({}, { expiresIn: "4h" });
    const env: NemesisEnvironment = {
      dir: o.dir,
      lab,
      nodes,
      gateways,
      issuer,
      token,
      async dispose() {
        await lab.heal().catch(() => undefined);
        for (const g of gateways) {
          g.resume();
          await g.process?.stop();
        }
        await issuer?.close();
        await nodes?.dispose();
        await lab.dispose();
      },
    };
    return env;
  } catch (err) {
    for (const g of gateways) await g.process?.kill();
    await issuer?.close();
    await nodes?.dispose().catch(() => undefined);
    await lab.dispose();
    throw err;
  }
}

// A real gateway for tests: the production composition (createGateway) listening on random
// loopback ports (the API's, and the metrics'), configured through the same environment variables as in production.
import { loadConfig, type Config } from "../../src/config.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { createLogger, type Logger } from "../../src/logger.js";
import { AUDIENCE, ISSUER, type TestIssuer } from "./issuer.js";

export const RECEIPT_SECRET = "test-receipt-secret-0123456789abcdef";

export interface TestGateway {
  readonly url: string;
  /** The Prometheus exposition: GET /metrics on the gateway's metrics port (not on `url`). */
  readonly metricsUrl: string;
  readonly gateway: Gateway;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Extra or overriding environment settings. */
  readonly env?: Record<string, string>;
  /** The gateway's clock. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Settings the environment cannot give (below their production minimum, for short tests). */
  readonly config?: Partial<Config>;
  /** The web console's built files (default: dist/console). */
  readonly consoleAssetsDir?: string;
  /** A token the console's sign-in page offers (as development auth does). */
  readonly devToken?: () => Promise<string>;
}

export async function startGateway(
  natsUrl: string,
  issuer: TestIssuer,
  {
    env = {},
    now,
    logger,
    config: overrides = {},
    consoleAssetsDir,
    devToken,
  }: TestGatewayOptions = {},
): Promise<TestGateway> {
  const loaded = loadConfig({
    NATS_URL: natsUrl,
    VQS_REGION: "iad1",
    VQS_OIDC_JWKS_URL: issuer.jwksUrl,
    VQS_OIDC_ISSUER: ISSUER,
    VQS_OIDC_AUDIENCE: AUDIENCE,
    VQS_RECEIPT_SECRET: RECEIPT_SECRET,
    LOG_LEVEL: process.env.VQS_TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  const config: Config = { ...loaded, ...overrides };
  const gateway = await createGateway({
    config,
    logger: logger ?? createLogger(config.logLevel),
    natsServers: config.natsServers ?? [natsUrl],
    ...(now ? { now } : {}),
    ...(consoleAssetsDir ? { consoleAssetsDir } : {}),
    ...(devToken ? { devToken } : {}),
  });
  const { url, metricsUrl } = await gateway.listen({
    port: 0,
    host: "127.0.0.1",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
  });
  return { url, metricsUrl, gateway, close: () => gateway.close() };
}

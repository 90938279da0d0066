// The `/queues-proxy` prefix: world-vercel (the Workflow DevKit's queue) reaches a queue only at
// `${WORKFLOW_VERCEL_BACKEND_URL}/queues-proxy/api/v3/…`, so the v3 API and the push JWKS answer
// there too. Only those two are mirrored: health, metrics and the console keep a single path each,
// so a path rule in front of the gateway that guards them cannot be walked around.
export const QUEUES_PROXY_PREFIX = "/queues-proxy";

const MIRRORED = [`${QUEUES_PROXY_PREFIX}/api/`, `${QUEUES_PROXY_PREFIX}/.well-known/jwks.json`];

/** The URL a request is routed by: a mirrored path without its prefix, any other unchanged. */
export function rewriteQueuesProxyUrl(url: string): string {
  for (const prefix of MIRRORED) {
    if (url.startsWith(prefix)) return url.slice(QUEUES_PROXY_PREFIX.length);
  }
  return url;
}

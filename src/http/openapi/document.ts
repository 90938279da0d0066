// The API document without a running gateway: the HTTP application built over stand-ins that
// are never called (building registers routes; only requests reach the services). For
// `npm run openapi` and tests; a gateway serves the same document at GET /openapi.json.
import type { FastifyInstance } from "fastify";
import { buildApp, type AppDeps } from "../../app.js";
import { createLogger } from "../../logger.js";

const UNUSED = new Proxy(
  {},
  {
    get: (_target, key) => {
      throw new Error(`openApiApp: ${String(key)} used while only building the routes`);
    },
  },
);

import { NamespaceCounts } from "../../queue/admission/in-flight/namespace-counts.js";

/** The application with every route, ready; close it when done. */
export async function openApiApp(): Promise<FastifyInstance> {
  const deps = {
    config: {
      allowedTeams: null,
      allowedProjects: null,
      allowedEnvironments: null,
      operatorTeams: new Set<string>(),
      rateLimitPerSecond: 0,
      rateLimitTeams: new Map<string, number>(),
      rateLimitBytesPerSecond: 0,
      rateLimitHoldMs: 0,
    },
    requestsInFlight: new NamespaceCounts(0),
    budget: { note: () => undefined, share: (_t: string, _k: string, limit: number) => limit },
    queue: UNUSED,
    settings: UNUSED,
    management: UNUSED,
    audit: UNUSED,
    pushKeys: () => ({ keys: [] }),
    verifier: UNUSED,
    now: Date.now,
    isReady: () => Promise.resolve(false),
    isDraining: () => false,
    logger: createLogger("silent"),
    metrics: UNUSED,
    maxMessageBytes: 1024,
    inlineBodyBytes: 1024,
    uploadRate: { minBytesPerSecond: 1024, windowMs: 60_000 },
    downloadRate: { minBytesPerSecond: 64 * 1024, windowMs: 60_000 },
    maxBatchBytes: 1024,
  } as unknown as AppDeps;
  const app = await buildApp(deps);
  await app.ready();
  return app;
}

/** The OpenAPI document, as docs/openapi.json holds it (2-space JSON, final newline). */
export async function openApiText(): Promise<string> {
  const app = await openApiApp();
  try {
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

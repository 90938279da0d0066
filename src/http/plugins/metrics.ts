// Times every request by route template (never the raw URL, which holds topic names and
// handles). The exposition itself is served on the metrics port (http/metrics-app.ts), not here.
import type { FastifyInstance } from "fastify";
import type { Metrics } from "../../metrics.js";

export function installMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", async (request, reply) => {
    metrics.observeHttp(
      request.method,
      request.routeOptions.url ?? "unmatched",
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
  });
}

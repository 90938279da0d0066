// Times every request by route template (never the raw URL, which holds topic names and
// handles) and serves GET /metrics in the Prometheus text format.
import type { FastifyInstance } from "fastify";
import type { Metrics } from "../../metrics.js";
import { METRICS } from "../openapi/operations.js";

export function installMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", async (request, reply) => {
    metrics.observeHttp(
      request.method,
      request.routeOptions.url ?? "unmatched",
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
  });
  app.get("/metrics", { schema: METRICS }, async (_request, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
}

// The metrics listener: GET /metrics in the Prometheus text format, on a port of its own
// (VQS_METRICS_PORT), never on the API port. Its labels name every tenant's namespaces, topics
// and groups, so it is for the operator's Prometheus only: no token guards it, the network does.
// Anything else here is 404 route_not_found, as on the API port.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Metrics } from "../metrics.js";
import { installErrorHandling } from "./error-handler.js";

export function buildMetricsApp(metrics: Metrics, logger: FastifyBaseLogger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger,
    // A scrape every few seconds is no request worth two log lines; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });
  installErrorHandling(app);
  // No route takes a body: none is parsed (a body that would not parse stays a 404).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));
  app.get("/metrics", async (_request, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
  return app;
}

// buildApp(deps): the HTTP application, in the order requests meet it. It never listens; main.ts
// (or a test) does. Every collaborator is passed in.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { randomUUID } from "node:crypto";
import type { TokenVerifier } from "./auth/token-verifier.js";
import type { Config } from "./config.js";
import { frameworkError, installErrorHandling } from "./http/error-handler.js";
import { installRateLimit, type RegionalBudget } from "./http/plugins/rate-limit.js";
import { installUploadWatchdog } from "./http/plugins/upload-watchdog.js";
import { installAuth } from "./http/plugins/auth.js";
import { installConsole, type ConsoleOptions } from "./http/plugins/console.js";
import { installHealth } from "./http/plugins/health.js";
import { installMetrics } from "./http/plugins/metrics.js";
import { installNamespaceCaps } from "./http/plugins/namespace-caps.js";
import type { NamespaceCounts } from "./queue/admission/in-flight/namespace-counts.js";
import { installOpenApi } from "./http/openapi/plugin.js";
import { acknowledgeRoute } from "./http/routes/messages/acknowledge.js";
import { changeVisibilityRoutes } from "./http/routes/messages/change-visibility.js";
import { consumerSettingsRoutes } from "./http/routes/settings/consumer-settings.js";
import { jwksRoute } from "./http/routes/push/jwks.js";
import { redriveRoute } from "./http/routes/dead-letters/redrive.js";
import type { AuditLog } from "./http/routes/management/audit.js";
import { managementRoutes } from "./http/routes/management/index.js";
import type { JWK } from "jose";
import { publishBatchRoute } from "./http/routes/messages/publish-batch.js";
import { publishRoute } from "./http/routes/messages/publish.js";
import { receiveByIdRoute } from "./http/routes/messages/receive-by-id.js";
import { receiveRoute } from "./http/routes/messages/receive.js";
import type { MinimumRate } from "./http/minimum-rate.js";
import { rewriteQueuesProxyUrl } from "./http/queues-proxy.js";
import { lazyChildLoggerFactory } from "./logger.js";
import type { Metrics } from "./metrics.js";
import type { QueueService } from "./queue/queue-service.js";
import type { ManagementService } from "./queue/management/management-service.js";
import type { SettingsService } from "./queue/settings/settings-service.js";

export interface AppDeps {
  readonly config: Pick<
    Config,
    | "allowedTeams"
    | "allowedProjects"
    | "allowedEnvironments"
    | "operatorTeams"
    | "rateLimitPerSecond"
    | "rateLimitTeams"
    | "rateLimitBytesPerSecond"
    | "rateLimitHoldMs"
  >;
  readonly queue: QueueService;
  readonly settings: SettingsService;
  /** Seeing and steering queues (docs/api.md, "Management API"). */
  readonly management: ManagementService;
  /** Where destructive management calls are recorded. */
  readonly audit: AuditLog;
  /** The public keys of push tokens (GET /.well-known/jwks.json). */
  readonly pushKeys: () => { keys: JWK[] };
  readonly verifier: TokenVerifier;
  /**
   * Two info lines per request (Fastify's); default on. Off, a request's lines are only those
   * of its errors: about 10 us of the gateway's thread per request saved (docs/operations.md).
   */
  readonly requestLogs?: boolean;
  /** The clock tokens expire by (the verifier's). */
  readonly now: () => number;
  readonly isReady: () => Promise<boolean>;
  /** True once shutdown began: responses then close their connection. */
  readonly isDraining: () => boolean;
  readonly logger: FastifyBaseLogger;
  readonly metrics: Metrics;
  /** The regional rate budgets' demand exchange. */
  readonly budget: RegionalBudget;
  /** Requests in flight per namespace on this gateway, capped. */
  readonly requestsInFlight: NamespaceCounts;
  /** Largest message body accepted (413 above). */
  readonly maxMessageBytes: number;
  /** Bodies up to this size travel inside their message; larger ones go to the body store. */
  readonly inlineBodyBytes: number;
  /** A request body slower than this over any window is cut off (408 request_timeout). */
  readonly uploadRate: MinimumRate;
  /** A large body's reader slower than this is cut off (download-rate.ts). */
  readonly downloadRate: MinimumRate;
  /** The inline parts of a batch publish held together until its body is read whole. */
  readonly maxBatchBytes: number;
  /** The web console at /console; null: off (/console is 404 route_not_found). */
  readonly console: ConsoleOptions | null;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    // Through a LogController: Fastify 5.8+ warns (FSTDEP023) at every start when the
    // top-level disableRequestLogging option is given at all.
    logController: new LogController({ disableRequestLogging: deps.requestLogs === false }),
    childLoggerFactory: lazyChildLoggerFactory,
    routerOptions: { maxParamLength: 2048 },
    // Routes other than publish (which streams its body) read small bodies only.
    bodyLimit: deps.inlineBodyBytes,
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    // Idle connections are closed by the gateway's close(), a moment after the listener: a
    // connection accepted just before must get to send its request (and be answered).
    forceCloseConnections: false,
    // No fixed limit on a whole request (a 100 MB upload may take minutes): a body must arrive
    // at the minimum upload rate instead (upload-watchdog.ts).
    requestTimeout: 0,
    frameworkErrors: frameworkError,
    // The same API under /queues-proxy, where world-vercel looks for it (http/queues-proxy.ts).
    rewriteUrl: (request) => rewriteQueuesProxyUrl(request.url ?? "/"),
  });
  installErrorHandling(app, (code) => deps.metrics.tenantLimitRefused(code));
  // Before any route: it collects every route's schema, and makes schemas documentation only.
  await installOpenApi(app);
  // Outside the API scope no route takes a body (health, readiness, the JWKS, and the 404
  // handler): none is parsed, so a body that would not parse cannot turn a 404 into a 400 or,
  // through Fastify's default JSON parser, into an error of its own. The unread body is
  // discarded by Node once the answer is sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));
  app.addHook("onSend", async (request, reply) => {
    // Every response names its request, for correlation with the logs.
    reply.header("x-request-id", request.id);
    // While draining, keep-alive connections are closed after each answer, so none is left
    // idle for the listener's close to cut under a request in flight.
    if (deps.isDraining()) reply.header("connection", "close");
  });
  installMetrics(app, deps.metrics);
  installUploadWatchdog(app, deps.uploadRate);
  installHealth(app, { isReady: deps.isReady });
  jwksRoute(app, deps.pushKeys);
  // Outside the API scope: the console's files need no token (its API calls carry one).
  if (deps.console) await installConsole(app, deps.console);

  await app.register(async (api) => {
    // Message bodies are opaque bytes whatever their Content-Type: no parser may touch them.
    api.removeAllContentTypeParsers();
    api.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, next) => next(null, body));
    installAuth(api, { verifier: deps.verifier, config: deps.config, now: deps.now });
    const partsLimit = installRateLimit(api, {
      perSecond: deps.config.rateLimitPerSecond,
      teams: deps.config.rateLimitTeams,
      bytesPerSecond: deps.config.rateLimitBytesPerSecond,
      holdMs: deps.config.rateLimitHoldMs,
      budget: deps.budget,
      onRefused: () => deps.metrics.tenantLimitRefused("rate_limited"),
      now: deps.now,
    });
    installNamespaceCaps(api, deps.requestsInFlight);
    await api.register((scope, _options, registered) => {
      // A publish and a batch read their own bodies, streamed: the parser hands the request stream over unread.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
      const limits = { inlineBytes: deps.inlineBodyBytes, maxBytes: deps.maxMessageBytes };
      publishRoute(scope, deps.queue, limits);
      publishBatchRoute(scope, deps.queue, limits, deps.maxBatchBytes, partsLimit);
      registered();
    });
    receiveRoute(api, deps.queue, deps.downloadRate);
    receiveByIdRoute(api, deps.queue, deps.downloadRate);
    acknowledgeRoute(api, deps.queue);
    changeVisibilityRoutes(api, deps.queue);
    consumerSettingsRoutes(api, deps.settings, deps.audit);
    redriveRoute(api, deps.queue, deps.audit);
    managementRoutes(api, deps.management, deps.audit);
  });
  return app;
}

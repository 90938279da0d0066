// Composes one gateway from its configuration: NATS connection -> JetStream adapter -> queue
// service -> HTTP app. Used by main.ts and by the tests, which run real gateways in-process.
import { namespaceLabel } from "./queue/namespace.js";
import { NamespaceCounts } from "./queue/admission/in-flight/namespace-counts.js";
import { DemandExchange } from "./nats/core/demand-exchange.js";
import { DelayedPublishCap } from "./queue/admission/rates/delayed-publish-cap.js";
import { FairShare } from "./queue/admission/in-flight/fair-share.js";
import { fairAdmin, fairBroker } from "./queue/admission/in-flight/fair-ports.js";
import type { FastifyInstance } from "fastify";
import { fileURLToPath } from "node:url";
import { buildApp } from "./app.js";
import { buildMetricsApp } from "./http/metrics-app.js";
import { createTokenVerifier, remoteKeySet, type TokenVerifier } from "./auth/token-verifier.js";
import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import { connectNats } from "./nats/core/connection.js";
import { openJetStreamAdapter, type JetStreamAdapter } from "./nats/jetstream-adapter.js";
import { LIMITS } from "./queue/limits.js";
import { QueueService } from "./queue/queue-service.js";
import { ID_FLAG_CACHE_MS } from "./queue/ledgers/id-lease-ledger.js";
import { createQueueContext } from "./queue/use-cases/queue-context.js";
import { SettingsService } from "./queue/settings/settings-service.js";
import type { SettingsStore } from "./queue/settings/settings-store.js";
import { deriveSecretKeys } from "./queue/identity/secret-keys.js";
import { ManagementService } from "./queue/management/management-service.js";
import type { JWTVerifyGetKey } from "jose";
import { Registry } from "prom-client";
import { createMetrics } from "./metrics.js";
import { PushAddressPolicy } from "./outbound/push-address-policy.js";
import { PushClient } from "./outbound/push-client.js";
import { PushSigningKeys } from "./outbound/push-signer.js";
import { Pusher } from "./queue/push-delivery/pusher.js";
import { PushScheduler } from "./queue/push-delivery/push-scheduler.js";
import { PushDestinations } from "./queue/settings/push-destinations.js";
import { teamOfKey } from "./queue/admission/tenant.js";

/**
 * Where `npm run build` puts the web console: dist/console of the checkout, whether this module
 * runs from src/ (tests, tsx) or from dist/ (npm start, the image).
 */
export const CONSOLE_ASSETS_DIR = fileURLToPath(new URL("../dist/console/", import.meta.url));

/** How long after the listener closes the idle keep-alive connections are closed. */
const IDLE_CLOSE_DELAY_MS = 1000;

export interface GatewayOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly natsServers: readonly string[];
  /** Overrides the configured receipt secret (development). */
  readonly receiptSecret?: string;
  /** Key set used instead of the configured JWKS URL (development issuer, tests). */
  readonly keys?: JWTVerifyGetKey;
  readonly issuers?: readonly string[];
  readonly audiences?: readonly string[];
  readonly now?: () => number;
  /** The web console's built files (default: dist/console). */
  readonly consoleAssetsDir?: string;
  /** Development auth: a token the console's sign-in page may offer (GET /console/dev-token). */
  readonly devToken?: () => Promise<string>;
}

/** Where a gateway listens: the API, and GET /metrics on a port of its own. */
export interface ListenAddresses {
  readonly port: number;
  readonly host: string;
  readonly metricsPort: number;
  readonly metricsHost: string;
}

export interface Listening {
  /** The API's base URL. */
  readonly url: string;
  /** The Prometheus exposition's URL (`.../metrics` on the metrics port). */
  readonly metricsUrl: string;
}

export interface Gateway {
  /** The API (and probes, the push JWKS, the console): on PORT. */
  readonly app: FastifyInstance;
  /** GET /metrics alone, on VQS_METRICS_PORT: its labels name every tenant's queues. */
  readonly metricsApp: FastifyInstance;
  /** The JetStream adapter: broker, scheduler, keys, settings, admin, push feeds. */
  readonly jetstream: JetStreamAdapter;
  /** The queue domain (waiting receives, for metrics and tests). */
  readonly queue: QueueService;
  /** Consumer group settings of the region, kept current in memory (for the pusher). */
  readonly settings: SettingsStore;
  readonly maxMessageBytes: number;
  /** Bodies up to this size travel inside their message; larger ones go to the body store. */
  readonly inlineBodyBytes: number;
  /** Listens on the configured addresses (or those given): the metrics port first. */
  listen(at?: Partial<ListenAddresses>): Promise<Listening>;
  /** Readiness answers 503 from now on (the first step of a graceful shutdown). */
  stopBeingReady(): void;
  /** Stops accepting requests, lets in-flight ones finish, stops the scheduler, drains NATS. */
  close(): Promise<void>;
}

export async function createGateway(o: GatewayOptions): Promise<Gateway> {
  const { config, logger } = o;
  const localNow = o.now ?? Date.now;
  const secret = o.receiptSecret ?? config.receiptSecret;
  if (!secret) throw new Error("no receipt secret configured (VQS_RECEIPT_SECRET)");
  // Token expiry is the issuer's business: checked against this host's clock.
  const verifier = makeVerifier(o, localNow);

  const nc = await connectNats(
    {
      servers: o.natsServers,
      name: `vqs-gateway-${config.region}`,
      credsFile: config.natsCredsFile,
      user: config.natsUser,
      password: config.natsPassword,
      token: config.natsToken,
    },
    logger,
  );
  const metrics = createMetrics(new Registry(), {
    groupStatsRefreshMs: config.metricsRefreshSeconds * 1000,
    maxPushGroups: config.metricsMaxGroups,
  });
  // Tenants' operations toward the store, and due timers' moves, shared fairly (fair-share.ts).
  const fairShare = new FairShare(localNow);
  const jetstream = await openJetStreamAdapter(nc, {
    region: config.region,
    replicas: config.streamReplicas,
    requestTimeoutMs: config.requestTimeoutMs,
    defaultLeaseMs: config.consumerAckWaitSeconds * 1000,
    maxAgeMs: LIMITS.retentionSeconds.max * 1000,
    dedupWindowMs: config.dedupWindowSeconds * 1000,
    messageTtl: config.messageTtl,
    consumerInactiveSeconds: config.consumerInactiveSeconds,
    maxLeaseMs: LIMITS.visibilityTimeoutSeconds.max * 1000,
    namespaceCaps: {
      topics: config.maxTopicsPerNamespace,
      groups: config.maxGroupsPerNamespace,
      settings: config.maxSettingsPerNamespace,
    },
    timerMovesPerSecondPerNamespace: config.maxTimerMovesPerSecondPerNamespace,
    timerShare: (key, op) => fairShare.run(key, op, false),
    // The count caps hold for the tenant's sum as well as for each deployment.
    tenantCaps: {
      topics: config.maxTopicsPerNamespace,
      groups: config.maxGroupsPerNamespace,
      settings: config.maxSettingsPerNamespace,
      deployments: config.maxDeploymentsPerTenant,
      bytes: (tenant) =>
        config.namespaceMaxBytesTeams.get(teamOfKey(tenant) ?? "") ?? config.tenantMaxBytes,
    },
    quotas: {
      topicMaxBytes: config.topicMaxBytes,
      hardMaxBytes: config.topicHardMaxBytes,
      namespaceMaxBytes: config.namespaceMaxBytes,
      teams: config.namespaceMaxBytesTeams,
    },
    topicIdleMs: config.topicIdleSeconds * 1000,
    settledTopicMs: config.settledTopicSeconds * 1000,
    log: logger,
    now: o.now ?? null,
    observe: (operation, seconds) => metrics.observeJetStream(operation, seconds),
    observeWriteFailure: (cause) => metrics.storeWriteFailures.inc({ cause }),
    onConnectionChange: (up) => metrics.natsConnected.set(up ? 1 : 0),
    largeBodies: {
      window: config.largeBodyWindow,
      readWindow: config.largeBodyReadWindow,
      maxStoreBytes: config.largeBodyStoreBytes,
      namespaceShareBytes: Math.floor(
        (config.largeBodyStoreBytes * config.largeBodyNamespacePercent) / 100,
      ),
      ingestBytesPerSecond: config.largeIngestBytesPerSecond,
      orphanGraceMs: config.largeBodyOrphanGraceSeconds * 1000,
      ttlMarginSeconds: config.largeBodyTtlMarginSeconds,
      minUploadBytesPerSecond: config.minUploadBytesPerSecond,
      uploadWindowSeconds: config.minUploadWindowSeconds,
      sweepIntervalMs: config.largeBodySweepSeconds * 1000,
      observeBytes: (direction, n) => metrics.largeBodyBytes.inc({ direction }, n),
      observeReadAhead: (n) => metrics.largeBodyReadAhead.inc(n),
    },
    failover: {
      neighbours: config.failoverRegions,
      credentials: {
        credsFile: config.natsCredsFile,
        user: config.natsUser,
        password: config.natsPassword,
        token: config.natsToken,
      },
    },
  });
  if (jetstream.failover) {
    const failover = jetstream.failover;
    metrics.useDeferredCount(() => failover.waiting());
  }
  metrics.useGroupStats(() => jetstream.groupStats(config.metricsMaxGroups));
  // The namespaces holding the most bytes, at most metricsMaxGroups of them.
  metrics.useNamespaceStorage(async () =>
    (await jetstream.admin.namespaces())
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, config.metricsMaxGroups)
      .map((n) => ({
        namespace: namespaceLabel(n.namespace),
        bytes: n.bytes,
        limitBytes: jetstream.quotas.namespaceLimit(n.namespace.key),
      })),
  );
  metrics.useLargeBodyUsage(() => jetstream.bodies.usage());
  const inlineBodyBytes = Math.min(config.inlineBodyBytes, jetstream.maxPayloadBytes);
  if (inlineBodyBytes < config.inlineBodyBytes) {
    logger.warn(
      { configured: config.inlineBodyBytes, effective: inlineBodyBytes },
      "The inline body limit is above what the NATS server's max_payload allows; using the smaller",
    );
  }
  // Without a body store (a server older than 2.11) nothing above the inline limit is taken; a
  // larger body is answered 413 large_body_unsupported, which says why.
  const maxMessageBytes = config.maxMessageBytes;
  if (jetstream.bodies.unsupportedReason && maxMessageBytes > inlineBodyBytes) {
    logger.warn({ inlineBodyBytes }, jetstream.bodies.unsupportedReason);
  }
  const secretKeys = deriveSecretKeys(secret, config.region);
  const budget = new DemandExchange(nc, config.region, logger);
  budget.start();
  // What the use cases share; the pusher is given the parts of it it needs (below).
  const queueContext = createQueueContext({
    broker: fairBroker(jetstream.broker, fairShare),
    records: jetstream.records,
    cuts: jetstream.cuts,
    flowSlots: jetstream.flowSlots,
    idLeaseMarkWaitMs: ID_FLAG_CACHE_MS + 500,
    keys: secretKeys,
    now: jetstream.now,
    observer: metrics.observer,
    settingsOf: (g) => jetstream.settings.effective(g.namespace, g.topic, g.group),
    log: logger,
    bodies: jetstream.bodies,
  });
  // Held for their key by a receive's waitlist, or by the push scheduler (made below).
  let pushScheduler: PushScheduler | null = null;
  metrics.useFlowHeld(() => {
    const pushed = pushScheduler?.heldForKeys() ?? { messages: 0, keys: 0 };
    return {
      messages: queueContext.flow.heldCount + pushed.messages,
      keys: queueContext.flow.waitingKeys + pushed.keys,
    };
  });
  const waiters = new NamespaceCounts(config.maxWaitersPerNamespace);
  const queue = new QueueService({
    context: queueContext,
    ...(jetstream.failover ? { deferrer: jetstream.failover } : {}),
    waiters,
    delayedPublishes: new DelayedPublishCap(
      config.maxDelayedPublishesPerSecond,
      {
        note: (ns, n) => budget.note(ns, "delayed", n),
        share: (ns, limit) => budget.share(ns, "delayed", limit),
      },
      jetstream.now,
    ),
    largeStreams: {
      maxUploads: config.maxLargeStreams,
      maxDownloads: config.maxLargeDownloads,
      onChange: (moving, waiting) => {
        metrics.largeBodyStreams.set(moving);
        metrics.largeBodyDownloadsWaiting.set(waiting);
      },
    },
  });
  const pushKeys = new PushSigningKeys({
    secret,
    region: config.region,
    keyIds: config.pushSigningKeyIds,
    issuer: config.pushIssuer,
    lifetimeSeconds: config.pushTokenSeconds,
  });
  const pushClient = new PushClient({
    policy: new PushAddressPolicy(config.pushAllowedPrivateNetworks),
  });
  const pushDestinations = new PushDestinations(
    config.pushAllowedUrls,
    config.pushAllowedUrlsTenants,
  );
  const pusher = new Pusher({
    handOut: queueContext.handOut,
    acks: queueContext.acks,
    idLeases: queueContext.idLeases,
    idLedger: queueContext.idLedger,
    groupLeases: queueContext.groupLeases,
    broker: jetstream.broker,
    outcomes: jetstream.pushHealth,
    ledger: queueContext.pushLedger,
    flow: queueContext.flow,
    transport: pushClient,
    signer: pushKeys,
    observer: metrics.push,
    log: logger,
    region: config.region,
    now: jetstream.now,
    inlineLimitBytes: config.pushInlineLimitBytes,
    destinations: pushDestinations,
  });
  const settings = new SettingsService({
    store: jetstream.settings,
    pushDestinations,
    admission: jetstream.admission,
  });
  const management = new ManagementService({
    admin: fairAdmin(jetstream.admin, fairShare),
    broker: fairBroker(jetstream.broker, fairShare),
    settings: jetstream.settings,
    duplicateIdKey: secretKeys.duplicateId,
    now: jetstream.now,
    idLedger: queueContext.idLedger,
    storageLimits: (ns) => ({
      namespaceBytes: jetstream.quotas.namespaceLimit(ns.key),
      topicBytes: jetstream.quotas.topicLimit,
    }),
    bodies: jetstream.bodies,
    slots: jetstream.flowSlots,
  });
  // Audit events are logged whatever LOG_LEVEL says, unless it asks for no logs at all.
  const audit = logger.child(
    { component: "audit" },
    { level: logger.level === "silent" ? "silent" : "info" },
  );
  let ready = true;
  const requestsInFlight = new NamespaceCounts(config.maxRequestsInFlightPerNamespace);
  const app = await buildApp({
    config,
    queue,
    settings,
    management,
    audit,
    pushKeys: () => pushKeys.jwks(),
    verifier,
    requestLogs: config.requestLogs,
    now: localNow,
    // With failover, a gateway whose home store is down still takes publishes (202): it stays
    // ready while a neighbour can store them.
    isReady: async () =>
      ready && ((await jetstream.broker.isReady()) || (jetstream.failover?.canDefer() ?? false)),
    isDraining: () => !ready,
    logger,
    metrics,
    requestsInFlight,
    budget,
    maxMessageBytes,
    inlineBodyBytes,
    uploadRate: {
      minBytesPerSecond: config.minUploadBytesPerSecond,
      windowMs: config.minUploadWindowSeconds * 1000,
    },
    downloadRate: {
      minBytesPerSecond: config.minDownloadBytesPerSecond,
      windowMs: config.minDownloadWindowSeconds * 1000,
    },
    maxBatchBytes: config.maxBatchBytes,
    console: config.console
      ? { assetsDir: o.consoleAssetsDir ?? CONSOLE_ASSETS_DIR, devToken: o.devToken ?? null }
      : null,
  });
  const metricsApp = buildMetricsApp(metrics, logger.child({ component: "metrics" }));
  jetstream.scheduler.start();
  const pushesInFlight = new NamespaceCounts(config.maxPushesInFlightPerNamespace);
  pushScheduler = new PushScheduler({
    push: (group, delivery, settings) => pusher.push(group, delivery, settings),
    ledger: queueContext.pushLedger,
    pushesInFlight,
    flow: queueContext.flow,
    now: jetstream.now,
    log: logger,
  });
  jetstream.startPush(pushScheduler);
  metrics.useNamespaceCaps({
    requests_in_flight: requestsInFlight,
    waiters,
    pushes_in_flight: pushesInFlight,
  });
  return {
    app,
    metricsApp,
    async listen(at = {}) {
      const metricsAddress = await metricsApp.listen({
        port: at.metricsPort ?? config.metricsPort,
        host: at.metricsHost ?? config.metricsHost,
      });
      const url = await app.listen({ port: at.port ?? config.port, host: at.host ?? config.host });
      return { url, metricsUrl: `${metricsAddress}/metrics` };
    },
    jetstream,
    queue,
    settings: jetstream.settings,
    maxMessageBytes,
    inlineBodyBytes,
    stopBeingReady() {
      ready = false;
    },
    async close() {
      ready = false;
      // Waiting receives answer 204 at once, so in-flight requests can finish within the grace.
      queue.stopWaiting();
      // Stop listening; answer what arrives on open connections (503 while closing); then
      // close the connections still idle. In-flight requests finish either way.
      const idle = setTimeout(() => app.server.closeIdleConnections(), IDLE_CLOSE_DELAY_MS);
      await app.close();
      clearTimeout(idle);
      budget.stop();
      await jetstream.close();
      await pushClient.close();
      // Draining needs a connection; while NATS is away there is nothing to drain.
      await nc.drain().catch(() => nc.close());
      // Last: a scrape during the drain still sees it.
      await metricsApp.close();
    },
  };
}

function makeVerifier(o: GatewayOptions, now: () => number): TokenVerifier {
  const oidc = o.config.oidc;
  const keys = o.keys ?? (oidc ? remoteKeySet(oidc.jwksUrl) : null);
  const issuers = o.issuers ?? oidc?.issuers;
  const audiences = o.audiences ?? oidc?.audiences;
  if (!keys || !issuers || !audiences) throw new Error("no token issuer configured (VQS_OIDC_*)");
  return createTokenVerifier({
    keys,
    issuers,
    audiences,
    claims: o.config.tenantClaims,
    clockToleranceSeconds: oidc?.clockToleranceSeconds ?? 5,
    now,
  });
}

// Configuration: read once from an environment object, validated, frozen. Bad settings stop the
// process at start with a message naming the variable. docs/configuration.md lists every setting (a test keeps it complete).
import { parseCidr } from "./outbound/push-address-policy.js";
import {
  DEVELOPMENT_PUSH_URLS,
  parsePushUrlPrefix,
  type PushUrlPrefix,
} from "./queue/settings/push-destinations.js";
import { foldedWarnings, tenantOverrides } from "./tenant-overrides.js";

export interface OidcConfig {
  readonly jwksUrl: string;
  readonly issuers: readonly string[];
  readonly audiences: readonly string[];
  readonly clockToleranceSeconds: number;
}

export interface TenantClaims {
  readonly team: string;
  readonly project: string;
  readonly environment: string;
}

/** A neighbour region that stores this region's publishes while its JetStream cannot. */
export interface FailoverRegion {
  readonly region: string;
  readonly servers: readonly string[];
}

export interface Config {
  readonly production: boolean;
  readonly port: number;
  readonly host: string;
  /** null: start an embedded single-node nats-server (development). */
  readonly natsServers: readonly string[] | null;
  readonly natsCredsFile: string | null;
  readonly natsUser: string | null;
  readonly natsPassword: string | null;
  readonly natsToken: string | null;
  readonly region: string;
  readonly failoverRegions: readonly FailoverRegion[];
  /** null: development auth (a local signing key, see src/dev/dev-issuer.ts). */
  readonly oidc: OidcConfig | null;
  readonly tenantClaims: TenantClaims;
  readonly allowedTeams: ReadonlySet<string> | null;
  readonly allowedProjects: ReadonlySet<string> | null;
  readonly allowedEnvironments: ReadonlySet<string> | null;
  /** Teams whose tokens are operators' (any namespace; GET /api/v3/namespaces). */
  readonly operatorTeams: ReadonlySet<string>;
  /** null in development: a secret kept in the data directory is used. */
  readonly receiptSecret: string | null;
  /** The largest message body (bytes; 100 MB = 100,000,000 by default). */
  readonly maxMessageBytes: number;
  /** Bodies up to this size travel inside their NATS message; larger ones go to the body store. */
  readonly inlineBodyBytes: number;
  /** Chunk publishes in flight per large body being uploaded (and copied). */
  readonly largeBodyWindow: number;
  /** Chunks asked for or held per large body being read, not yet handed to its reader. */
  readonly largeBodyReadWindow: number;
  /** Byte limit of the region's large-body store; 0: none. */
  readonly largeBodyStoreBytes: number;
  /** A body no message points at this long after its last chunk is removed by the sweep. */
  readonly largeBodyOrphanGraceSeconds: number;
  /** A large body's chunks outlive its message's retention by this much (reads under way). */
  readonly largeBodyTtlMarginSeconds: number;
  /** How often each gateway sweeps the large-body store (orphans, usage per namespace). */
  readonly largeBodySweepSeconds: number;
  /** Percent of the large-body store one namespace may use (of VQS_LARGE_BODY_STORE_BYTES). */
  readonly largeBodyNamespacePercent: number;
  /** Large-body uploads a gateway takes at once; 503 large_body_busy past it. */
  readonly maxLargeStreams: number;
  /**
   * Large-body downloads a gateway streams at once; past it receive by ID of a large message
   * answers 503 large_body_busy (nothing leased), and a receive's large body waits its turn.
   */
  readonly maxLargeDownloads: number;
  /** Bytes per second a gateway takes into the large-body store, all uploads together; 0: any. */
  readonly largeIngestBytesPerSecond: number;
  /** A request body must bring at least this many bytes per second over any 60 s; else 408. */
  readonly minUploadBytesPerSecond: number;
  /** The window that rate is measured over. */
  readonly minUploadWindowSeconds: number;
  /** A large body's reader must take at least this many bytes per second over each window. */
  readonly minDownloadBytesPerSecond: number;
  /** The window that rate is measured over, from the body's first chunk. */
  readonly minDownloadWindowSeconds: number;
  readonly maxBatchBytes: number;
  readonly streamReplicas: number;
  readonly requestTimeoutMs: number;
  readonly consumerInactiveSeconds: number;
  readonly consumerAckWaitSeconds: number;
  readonly dedupWindowSeconds: number;
  /** Per-message TTL on nats-server 2.11+ ("auto") or never ("off"). */
  readonly messageTtl: "auto" | "off";
  /** Requests per second per tenant in the region (publish and receive); 0: no limit. */
  readonly rateLimitPerSecond: number;
  /** Per-team overrides of rateLimitPerSecond. */
  readonly rateLimitTeams: ReadonlyMap<string, number>;
  /** Publish body bytes per second per tenant in the region; 0: no limit. */
  readonly rateLimitBytesPerSecond: number;
  /** How long a request is held when its tenant was refused on its connection just before. */
  readonly rateLimitHoldMs: number;
  /** Topics per namespace; 0: no cap. */
  readonly maxTopicsPerNamespace: number;
  /** Consumer groups per namespace (all its topics together); 0: no cap. */
  readonly maxGroupsPerNamespace: number;
  /** Bytes one topic may store, checked by the gateways; 0: no limit. */
  readonly topicMaxBytes: number;
  /** JetStream's own max_bytes (discard new) on every topic stream; 0: none (it is reserved). */
  readonly topicHardMaxBytes: number;
  /** Bytes all of a namespace's topics may store together; 0: no limit. */
  readonly namespaceMaxBytes: number;
  /** Per-team overrides of namespaceMaxBytes and tenantMaxBytes (VQS_TENANT_OVERRIDES `bytes`). */
  readonly namespaceMaxBytesTeams: ReadonlyMap<string, number>;
  /** Bytes all of a tenant's topics may store, all its deployments together; 0: no limit. */
  readonly tenantMaxBytes: number;
  /** Live deployments (namespaces holding topics or settings) per tenant; 0: no bound. */
  readonly maxDeploymentsPerTenant: number;
  /** Per namespace on one gateway: requests in flight, waiting receives, pushes in flight; 0: none. */
  readonly maxRequestsInFlightPerNamespace: number;
  readonly maxWaitersPerNamespace: number;
  /** Delayed publishes per second per namespace in the region (0: no cap). */
  readonly maxDelayedPublishesPerSecond: number;
  /** Delayed messages moved (come due) per second per namespace on one gateway (0: no budget). */
  readonly maxTimerMovesPerSecondPerNamespace: number;
  readonly maxPushesInFlightPerNamespace: number;
  /** An empty topic not published to for this long is removed. */
  readonly topicIdleSeconds: number;
  /** A settled topic under a pushed pattern not published to for this long is removed; 0: never. */
  readonly settledTopicSeconds: number;
  /** Consumer settings documents per namespace; 0: no cap. */
  readonly maxSettingsPerNamespace: number;
  /**
   * Where pushes may go (VQS_PUSH_ALLOWED_URLS; in development, unset: this machine). null:
   * push is off (production without the setting).
   */
  readonly pushAllowedUrls: readonly PushUrlPrefix[] | null;
  /** Per tenant ("team" or "team/project") allow-lists (VQS_TENANT_OVERRIDES `push`). */
  readonly pushAllowedUrlsTenants: ReadonlyMap<string, readonly PushUrlPrefix[]>;
  /**
   * Private, loopback or link-local networks a push destination's name may resolve to
   * (VQS_PUSH_ALLOWED_PRIVATE_NETWORKS, CIDR; in development, unset: loopback).
   */
  readonly pushAllowedPrivateNetworks: readonly string[];
  /** Payloads above this are pushed without body and handle (the client leases them by ID). */
  readonly pushInlineLimitBytes: number;
  /** Key IDs of the push signing keys: the first signs, every one is published. */
  readonly pushSigningKeyIds: readonly string[];
  /** `iss` of push tokens. */
  readonly pushIssuer: string;
  /** How long a push token is valid. */
  readonly pushTokenSeconds: number;
  readonly logLevel: string;
  /** Fastify's two info lines per request ("incoming request", "request completed"). */
  readonly requestLogs: boolean;
  readonly shutdownGraceSeconds: number;
  readonly shutdownDelaySeconds: number;
  /**
   * GET /metrics is served on a listener of its own (HOST:VQS_METRICS_PORT), never on
   * the API port: its labels name every tenant's namespaces, topics and groups.
   */
  readonly metricsPort: number;
  readonly metricsHost: string;
  readonly metricsMaxGroups: number;
  readonly metricsRefreshSeconds: number;
  /** The web console at /console (VQS_CONSOLE; on in development, off in production). */
  readonly console: boolean;
  /**
   * V8's old-generation growing factor as a percentage over 1 (0: V8's
   * own heuristic). See docs/architecture.md, "Garbage collection under large transfers".
   */
  readonly heapGrowingPercent: number;
}

/**
 * Values no operator sets: fixed here, not read from the environment (docs/configuration.md,
 * "Fixed values"). Tests and the benchmark pass other values in process: `startGateway`'s
 * `config`, or `startGatewayProcess`'s `options` (a JSON argument of src/dev/gateway-process.ts).
 */
export const FIXED = {
  oidcClockToleranceSeconds: 5,
  /** Bodies up to this size travel inside their NATS message (lowered to fit max_payload). */
  inlineBodyBytes: 1_048_576,
  largeBodyWindow: 8,
  largeBodyReadWindow: 4,
  largeBodyOrphanGraceSeconds: 300,
  largeBodyTtlMarginSeconds: 300,
  largeBodySweepSeconds: 300,
  largeBodyNamespacePercent: 25,
  largeIngestBytesPerSecond: 50_000_000,
  minUploadBytesPerSecond: 65_536,
  minUploadWindowSeconds: 60,
  minDownloadBytesPerSecond: 65_536,
  minDownloadWindowSeconds: 60,
  maxBatchBytes: 16 * 1_048_576,
  requestTimeoutMs: 5000,
  // Racing publishes of one idempotency key within this window share one stored copy; a
  // publish retried after a gateway crash is deduplicated within it (see architecture.md).
  dedupWindowSeconds: 120,
  messageTtl: "auto" as "auto" | "off",
  rateLimitHoldMs: 200,
  topicHardMaxBytes: 0,
  topicIdleSeconds: 86_400,
  settledTopicSeconds: 120,
  maxSettingsPerNamespace: 1000,
  maxTimerMovesPerSecondPerNamespace: 1000,
  // A share of the gateway's pushes, not a refusal: past it the namespace's groups pull less.
  maxPushesInFlightPerNamespace: 256,
  pushInlineLimitBytes: 1_048_576,
  pushTokenSeconds: 300,
  // The lease a receive gets without an extra -NAK round trip, and what every lease falls back
  // to after a consumer-leader failover (NAK delays do not survive it on nats-server 2.9).
  consumerAckWaitSeconds: 60,
  // At least the longest TTL plus an hour: a removed group that comes back replays only
  // messages it never received.
  consumerInactiveSeconds: 14 * 86_400,
  requestLogs: true,
  shutdownGraceSeconds: 25,
  shutdownDelaySeconds: 2,
  metricsMaxGroups: 1000,
  metricsRefreshSeconds: 15,
  heapGrowingPercent: 300,
} as const;

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env): Config {
  const problems: string[] = [];
  const str = (name: string): string | null => {
    const v = env[name]?.trim();
    return v ? v : null;
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === null) return def;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return def;
    }
    return Number(raw);
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], def: T): T => {
    const raw = str(name);
    if (raw === null) return def;
    if (!(values as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${values.join(", ")} (got "${raw}")`);
      return def;
    }
    return raw as T;
  };
  const list = (name: string): string[] =>
    (str(name) ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  const set = (name: string): ReadonlySet<string> | null => {
    const l = list(name);
    return l.length ? new Set(l) : null;
  };

  const production = env.NODE_ENV === "production";
  const host = str("HOST") ?? "0.0.0.0";
  const region = str("VQS_REGION") ?? "dev1";
  if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(region)) {
    problems.push(`VQS_REGION must be a short lowercase region code like "iad1" (got "${region}")`);
  }

  const jwksUrl = str("VQS_OIDC_JWKS_URL");
  const issuers = list("VQS_OIDC_ISSUER");
  const audiences = list("VQS_OIDC_AUDIENCE");
  let oidc: OidcConfig | null = null;
  if (jwksUrl || issuers.length || audiences.length) {
    if (!jwksUrl || !issuers.length || !audiences.length) {
      problems.push(
        "VQS_OIDC_JWKS_URL, VQS_OIDC_ISSUER and VQS_OIDC_AUDIENCE must be set together",
      );
    } else if (!/^https?:\/\//.test(jwksUrl)) {
      problems.push(`VQS_OIDC_JWKS_URL must be an http(s) URL (got "${jwksUrl}")`);
    } else {
      oidc = {
        jwksUrl,
        issuers,
        audiences,
        clockToleranceSeconds: FIXED.oidcClockToleranceSeconds,
      };
    }
  } else if (production) {
    problems.push(
      "NODE_ENV=production needs VQS_OIDC_JWKS_URL, VQS_OIDC_ISSUER and VQS_OIDC_AUDIENCE",
    );
  }

  const claimNames = list("VQS_TENANT_CLAIMS");
  if (claimNames.length !== 0 && claimNames.length !== 3) {
    problems.push("VQS_TENANT_CLAIMS must name three claims: team,project,environment");
  }
  const tenantClaims: TenantClaims = {
    team: claimNames[0] ?? "owner_id",
    project: claimNames[1] ?? "project_id",
    environment: claimNames[2] ?? "environment",
  };

  const receiptSecret = str("VQS_RECEIPT_SECRET");
  if (receiptSecret !== null && receiptSecret.length < 32) {
    problems.push("VQS_RECEIPT_SECRET must be at least 32 characters");
  }
  if (receiptSecret === null && production) {
    problems.push("NODE_ENV=production needs VQS_RECEIPT_SECRET (at least 32 characters)");
  }

  const failoverRegions: FailoverRegion[] = [];
  for (const entry of (str("VQS_FAILOVER_REGIONS") ?? "").split(";").filter((e) => e.trim())) {
    const m = /^\s*([a-z0-9][a-z0-9-]{0,30})\s*=\s*(.+)$/.exec(entry);
    const servers = (m?.[2] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (!m || servers.length === 0 || !servers.every((s) => /^(nats|tls):\/\/\S+$/.test(s))) {
      problems.push(
        `VQS_FAILOVER_REGIONS entry "${entry}" must look like sfo1=nats://host:4222[,nats://...]`,
      );
    } else if (m[1] === region) {
      problems.push(`VQS_FAILOVER_REGIONS must not name this gateway's own region ${region}`);
    } else {
      failoverRegions.push({ region: m[1]!, servers });
    }
  }

  const natsUrl = list("NATS_URL");
  if (natsUrl.length === 0 && production) {
    problems.push("NODE_ENV=production needs NATS_URL (the region's NATS servers)");
  }

  const overrides = tenantOverrides(env, problems);

  const config: Config = {
    production,
    port: int("PORT", 8080, 0, 65535),
    host,
    natsServers: natsUrl.length ? natsUrl : null,
    natsCredsFile: str("NATS_CREDS_FILE"),
    natsUser: str("NATS_USER"),
    natsPassword: str("NATS_PASSWORD"),
    natsToken: str("NATS_TOKEN"),
    region,
    failoverRegions,
    oidc,
    tenantClaims,
    allowedTeams: set("VQS_ALLOWED_TEAMS"),
    allowedProjects: set("VQS_ALLOWED_PROJECTS"),
    allowedEnvironments: set("VQS_ALLOWED_ENVIRONMENTS"),
    operatorTeams: set("VQS_OPERATOR_TEAMS") ?? new Set<string>(),
    receiptSecret,
    maxMessageBytes: int("VQS_MAX_MESSAGE_BYTES", 100_000_000, 1, 1_000_000_000),
    inlineBodyBytes: FIXED.inlineBodyBytes,
    largeBodyWindow: FIXED.largeBodyWindow,
    largeBodyReadWindow: FIXED.largeBodyReadWindow,
    largeBodyStoreBytes: int("VQS_LARGE_BODY_STORE_BYTES", 10 * 1024 ** 3, 0, 2 ** 50),
    largeBodyOrphanGraceSeconds: FIXED.largeBodyOrphanGraceSeconds,
    largeBodyTtlMarginSeconds: FIXED.largeBodyTtlMarginSeconds,
    largeBodySweepSeconds: FIXED.largeBodySweepSeconds,
    largeBodyNamespacePercent: FIXED.largeBodyNamespacePercent,
    maxLargeStreams: int(renamed(env, "VQS_MAX_LARGE_UPLOADS"), 16, 1, 10_000),
    maxLargeDownloads: int("VQS_MAX_LARGE_DOWNLOADS", 16, 1, 10_000),
    largeIngestBytesPerSecond: FIXED.largeIngestBytesPerSecond,
    minUploadBytesPerSecond: FIXED.minUploadBytesPerSecond,
    minUploadWindowSeconds: FIXED.minUploadWindowSeconds,
    minDownloadBytesPerSecond: FIXED.minDownloadBytesPerSecond,
    minDownloadWindowSeconds: FIXED.minDownloadWindowSeconds,
    maxBatchBytes: FIXED.maxBatchBytes,
    streamReplicas: int("VQS_STREAM_REPLICAS", 1, 1, 5),
    requestTimeoutMs: FIXED.requestTimeoutMs,
    dedupWindowSeconds: FIXED.dedupWindowSeconds,
    messageTtl: FIXED.messageTtl,
    rateLimitPerSecond: int(renamed(env, "VQS_RATE_LIMIT_PER_SECOND_PER_TENANT"), 0, 0, 1_000_000),
    rateLimitTeams: overrides.rate,
    rateLimitBytesPerSecond: int(
      renamed(env, "VQS_RATE_LIMIT_BYTES_PER_SECOND_PER_TENANT"),
      0,
      0,
      2 ** 50,
    ),
    rateLimitHoldMs: FIXED.rateLimitHoldMs,
    maxTopicsPerNamespace: int("VQS_MAX_TOPICS_PER_NAMESPACE", 1000, 0, 1_000_000),
    maxGroupsPerNamespace: int("VQS_MAX_GROUPS_PER_NAMESPACE", 5000, 0, 10_000_000),
    topicMaxBytes: int("VQS_TOPIC_MAX_BYTES", 1 << 30, 0, 2 ** 50),
    topicHardMaxBytes: FIXED.topicHardMaxBytes,
    namespaceMaxBytes: int("VQS_NAMESPACE_MAX_BYTES", 10 * (1 << 30), 0, 2 ** 50),
    namespaceMaxBytesTeams: overrides.bytes,
    tenantMaxBytes: int("VQS_TENANT_MAX_BYTES", 256 * 1_048_576, 0, 2 ** 50),
    maxDeploymentsPerTenant: int("VQS_MAX_DEPLOYMENTS_PER_TENANT", 32, 0, 1_000_000),
    maxRequestsInFlightPerNamespace: int("VQS_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE", 1000, 0, 1e7),
    maxWaitersPerNamespace: int("VQS_MAX_WAITERS_PER_NAMESPACE", 1000, 0, 1e7),
    maxDelayedPublishesPerSecond: int(
      renamed(env, "VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE"),
      1000,
      0,
      1e9,
    ),
    maxTimerMovesPerSecondPerNamespace: FIXED.maxTimerMovesPerSecondPerNamespace,
    maxPushesInFlightPerNamespace: FIXED.maxPushesInFlightPerNamespace,
    topicIdleSeconds: FIXED.topicIdleSeconds,
    settledTopicSeconds: FIXED.settledTopicSeconds,
    maxSettingsPerNamespace: FIXED.maxSettingsPerNamespace,
    pushAllowedUrls: pushAllowedUrls(
      list("VQS_PUSH_ALLOWED_URLS"),
      overrides.push.size > 0,
      production,
      problems,
    ),
    pushAllowedUrlsTenants: overrides.push,
    pushAllowedPrivateNetworks: privateNetworks(
      str("VQS_PUSH_ALLOWED_PRIVATE_NETWORKS"),
      production,
      problems,
    ),
    pushInlineLimitBytes: FIXED.pushInlineLimitBytes,
    pushSigningKeyIds: keyIds(list("VQS_PUSH_SIGNING_KEY_IDS"), problems),
    pushIssuer: `urn:vqs:${region}`,
    pushTokenSeconds: FIXED.pushTokenSeconds,
    consumerAckWaitSeconds: FIXED.consumerAckWaitSeconds,
    consumerInactiveSeconds: FIXED.consumerInactiveSeconds,
    logLevel: str("LOG_LEVEL") ?? "info",
    requestLogs: FIXED.requestLogs,
    shutdownGraceSeconds: FIXED.shutdownGraceSeconds,
    shutdownDelaySeconds: FIXED.shutdownDelaySeconds,
    metricsPort: int("VQS_METRICS_PORT", 9464, 0, 65535),
    metricsHost: host,
    metricsMaxGroups: FIXED.metricsMaxGroups,
    metricsRefreshSeconds: FIXED.metricsRefreshSeconds,
    console: oneOf("VQS_CONSOLE", ["on", "off"] as const, production ? "off" : "on") === "on",
    heapGrowingPercent: FIXED.heapGrowingPercent,
  };
  if (config.metricsPort !== 0 && config.metricsPort === config.port) {
    problems.push(`VQS_METRICS_PORT must differ from PORT (both ${config.port})`);
  }
  if (problems.length) {
    throw new ConfigError(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
  }
  return Object.freeze(config);
}

/** Settings renamed in this release, new name to old: the old one still works until the next. */
export const RENAMED: Readonly<Record<string, string>> = {
  VQS_MAX_LARGE_UPLOADS: "VQS_MAX_LARGE_STREAMS",
  VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE: "VQS_MAX_DELAYED_PUBLISHES_PER_SECOND",
  VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "VQS_RATE_LIMIT_PER_SECOND",
  VQS_RATE_LIMIT_BYTES_PER_SECOND_PER_TENANT: "VQS_RATE_LIMIT_BYTES_PER_SECOND",
};

/** The variable to read for a renamed setting: its new name, else its old one when only that is set. */
function renamed(env: Env, name: string): string {
  const old = RENAMED[name]!;
  return env[name]?.trim() || !env[old]?.trim() ? name : old;
}

/**
 * Variables earlier releases read whose values are now fixed (`FIXED`): one set is ignored,
 * with a warning at start, so an operator's old chart or manifest is told rather than silently
 * obeyed in part.
 */
export const RETIRED: readonly string[] = [
  "VQS_CONSUMER_ACK_WAIT_SECONDS",
  "VQS_CONSUMER_INACTIVE_SECONDS",
  "VQS_DATA_DIR",
  "VQS_DEDUP_WINDOW_SECONDS",
  "VQS_HEAP_GROWING_PERCENT",
  "VQS_INLINE_BODY_BYTES",
  "VQS_LARGE_BODY_NAMESPACE_PERCENT",
  "VQS_LARGE_BODY_ORPHAN_GRACE_SECONDS",
  "VQS_LARGE_BODY_READ_WINDOW",
  "VQS_LARGE_BODY_SWEEP_SECONDS",
  "VQS_LARGE_BODY_TTL_MARGIN_SECONDS",
  "VQS_LARGE_BODY_WINDOW",
  "VQS_LARGE_INGEST_BYTES_PER_SECOND",
  "VQS_MAX_BATCH_BYTES",
  "VQS_MAX_PUSHES_IN_FLIGHT_PER_NAMESPACE",
  "VQS_MAX_SETTINGS_PER_NAMESPACE",
  "VQS_MAX_TIMER_MOVES_PER_SECOND_PER_NAMESPACE",
  "VQS_MESSAGE_TTL",
  "VQS_METRICS_HOST",
  "VQS_METRICS_MAX_GROUPS",
  "VQS_METRICS_REFRESH_SECONDS",
  "VQS_MIN_DOWNLOAD_BYTES_PER_SECOND",
  "VQS_MIN_DOWNLOAD_WINDOW_SECONDS",
  "VQS_MIN_UPLOAD_BYTES_PER_SECOND",
  "VQS_MIN_UPLOAD_WINDOW_SECONDS",
  "VQS_NATS_REQUEST_TIMEOUT_MS",
  "VQS_OIDC_CLOCK_TOLERANCE_SECONDS",
  "VQS_OPERATOR_CLAIM",
  "VQS_PUSH_INLINE_LIMIT_BYTES",
  "VQS_PUSH_ISSUER",
  "VQS_PUSH_TOKEN_SECONDS",
  "VQS_RATE_LIMIT_HOLD_MS",
  "VQS_REQUEST_LOGS",
  "VQS_SETTLED_TOPIC_SECONDS",
  "VQS_SHUTDOWN_DELAY_SECONDS",
  "VQS_SHUTDOWN_GRACE_SECONDS",
  "VQS_TOPIC_HARD_MAX_BYTES",
  "VQS_TOPIC_IDLE_SECONDS",
];

/** Retired variables that something else replaces, and what (the rest have a fixed value). */
const REPLACED: Readonly<Record<string, string>> = {
  VQS_DATA_DIR: "development's data directory is `--data-dir` of npm start and npm run token",
  VQS_OPERATOR_CLAIM: "operators are the teams in VQS_OPERATOR_TEAMS",
};

/** A warning for each old or retired name set (src/main.ts logs them at start). */
export function settingWarnings(env: Env): string[] {
  const retired = RETIRED.filter((name) => env[name]?.trim()).map(
    (name) =>
      `${name} is no longer read: ${REPLACED[name] ?? "its value is fixed"} (docs/configuration.md)`,
  );
  return [...retired, ...renamedWarnings(env), ...foldedWarnings(env)];
}

function renamedWarnings(env: Env): string[] {
  return Object.entries(RENAMED)
    .filter(([, old]) => env[old]?.trim())
    .map(([name, old]) =>
      env[name]?.trim()
        ? `${old} is ignored: ${name}, its new name, is set`
        : `${old} is renamed ${name}; the old name stops working in the next release`,
    );
}

/** VQS_PUSH_SIGNING_KEY_IDS: key IDs (a `kid`), the first signs; default one key, "v1". */
function keyIds(ids: string[], problems: string[]): readonly string[] {
  for (const id of ids) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) {
      problems.push(`VQS_PUSH_SIGNING_KEY_IDS entries are 1-64 of A-Z a-z 0-9 . _ - (got "${id}")`);
    }
  }
  if (new Set(ids).size !== ids.length) problems.push("VQS_PUSH_SIGNING_KEY_IDS has a repeat");
  return ids.length ? ids : ["v1"];
}

/**
 * VQS_PUSH_ALLOWED_URLS: comma-separated URL prefixes (see push-destinations.ts). Unset: none;
 * in development with no tenant list either, this machine.
 */
function pushAllowedUrls(
  entries: readonly string[],
  tenantLists: boolean,
  production: boolean,
  problems: string[],
): readonly PushUrlPrefix[] | null {
  if (entries.length === 0) {
    return production || tenantLists
      ? null
      : DEVELOPMENT_PUSH_URLS.map((u) => parsePushUrlPrefix(u));
  }
  const prefixes: PushUrlPrefix[] = [];
  for (const entry of entries) {
    try {
      prefixes.push(parsePushUrlPrefix(entry));
    } catch (err) {
      problems.push(`VQS_PUSH_ALLOWED_URLS entry ${(err as Error).message}`);
    }
  }
  return prefixes;
}

/** What development lets push names resolve to when VQS_PUSH_ALLOWED_PRIVATE_NETWORKS is unset. */
const DEVELOPMENT_PRIVATE_NETWORKS = ["127.0.0.0/8", "::1/128"];

/** VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: CIDR ranges, or "none". */
function privateNetworks(
  value: string | null,
  production: boolean,
  problems: string[],
): readonly string[] {
  if (value === null) return production ? [] : DEVELOPMENT_PRIVATE_NETWORKS;
  if (value === "none") return [];
  const cidrs = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const cidr of cidrs) {
    if (!parseCidr(cidr)) {
      problems.push(
        `VQS_PUSH_ALLOWED_PRIVATE_NETWORKS entries are CIDR ranges such as 10.0.0.0/8 or fd00::/8 (got "${cidr}")`,
      );
    }
  }
  return cidrs;
}

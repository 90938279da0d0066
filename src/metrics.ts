// Every metric the gateway exports, declared in one place into an injected registry. Names are in
// base units; labels are bounded (route templates, status codes, operations), never topic names.
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from "prom-client";
import { namespaceLabel, type GroupAddress } from "./queue/namespace.js";
import type { QueueObserver } from "./queue/observer.js";
import type { PushObserver, PushOutcome } from "./queue/push-delivery/push-ports.js";

/** One consumer group's figures, as the per-group gauges export them. */
export interface GroupStat {
  readonly namespace: string;
  readonly topic: string;
  readonly group: string;
  readonly backlog: number;
  readonly inFlight: number;
  readonly oldestAgeSeconds: number;
}

/** One namespace's storage and quota, as vqs_namespace_storage_* export them. */
export interface NamespaceStorageStat {
  readonly namespace: string;
  readonly bytes: number;
  /** 0: no quota. */
  readonly limitBytes: number;
}

export type NamespaceStorageProvider = () => Promise<NamespaceStorageStat[]>;

export type GroupStatsProvider = () => Promise<{ stats: GroupStat[]; truncated: boolean }>;

export interface MetricsOptions {
  /** The per-group gauges are read from the store at most this often. */
  readonly groupStatsRefreshMs: number;
  /** Most groups in the per-group push health gauges (metricsMaxGroups). */
  readonly maxPushGroups?: number;
}

export interface Metrics {
  readonly registry: Registry;
  /** Records one HTTP request's duration under its route template (never its raw URL). */
  observeHttp(method: string, route: string, statusCode: number, seconds: number): void;
  readonly natsConnected: Gauge;
  /** Publishes the store did not take, by cause (see src/nats/core/errors.ts). */
  readonly storeWriteFailures: Counter<"cause">;
  readonly observer: QueueObserver;
  /** Records the duration of one JetStream operation. */
  observeJetStream(operation: string, seconds: number): void;
  /** Where the per-group gauges come from (set once the store is open). */
  useGroupStats(provider: GroupStatsProvider): void;
  /** Where the per-namespace storage gauges come from (set once the store is open). */
  useNamespaceStorage(provider: NamespaceStorageProvider): void;
  /** Where vqs_deferred_messages comes from (with regional failover configured). */
  useDeferredCount(provider: () => Promise<number>): void;
  /** Push outcomes, latency, pushes in flight and per-group push health. */
  readonly push: PushObserver;
  /** Counts a 429 of a tenant limit, by its error code. */
  tenantLimitRefused(code: string): void;
  /** Where vqs_namespaces_at_cap reads each per-namespace cap of this gateway. */
  useNamespaceCaps(caps: Readonly<Record<string, { readonly atCap: number }>>): void;
  /** Bytes of large bodies moved into ("in") and out of ("out") the body store. */
  readonly largeBodyBytes: Counter<"direction">;
  /** Large bodies being moved through this gateway now (uploads and downloads). */
  readonly largeBodyStreams: Gauge;
  readonly largeBodyDownloadsWaiting: Gauge;
  readonly largeBodyReadAhead: Gauge;
  /** Where vqs_large_body_stored_bytes comes from (the body store's last sweep). */
  useLargeBodyUsage(provider: () => ReadonlyMap<string, number>): void;
  /** Where the flow-control gauges read what this gateway holds over keys' limits. */
  useFlowHeld(provider: () => { readonly messages: number; readonly keys: number }): void;
}

export function createMetrics(registry: Registry, options: MetricsOptions): Metrics {
  collectDefaultMetrics({ register: registry });
  const jetstreamDuration = new Histogram({
    name: "vqs_jetstream_request_duration_seconds",
    help: "Duration of JetStream operations by operation (publish, pull, ack, nak, ...).",
    labelNames: ["operation"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  });
  const groupGauges = perGroupGauges(registry, options.groupStatsRefreshMs);
  const namespaceStorage = namespaceStorageGauges(registry, options.groupStatsRefreshMs);
  let deferredCount: (() => Promise<number>) | null = null;
  new Gauge({
    name: "vqs_deferred_messages",
    help: "Messages of this region stored in failover regions, waiting to be relocated home.",
    registers: [registry],
    async collect() {
      if (deferredCount) this.set(await deferredCount().catch(() => 0));
    },
  });
  const httpDuration = new Histogram({
    name: "vqs_http_request_duration_seconds",
    help: "HTTP request duration by method, route template and status code.",
    labelNames: ["method", "route", "status_code"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const published = new Counter({
    name: "vqs_messages_published_total",
    help: "Messages stored by publish.",
    registers: [registry],
  });
  const deduplicated = new Counter({
    name: "vqs_messages_deduplicated_total",
    help: "Publishes dropped as duplicates of a live message with the same idempotency key.",
    registers: [registry],
  });
  const delivered = new Counter({
    name: "vqs_messages_delivered_total",
    help: "Messages handed to consumers; redelivery=true for delivery counts above 1.",
    labelNames: ["redelivery"],
    registers: [registry],
  });
  const deferred = new Counter({
    name: "vqs_messages_deferred_total",
    help: "Publishes stored in a neighbour region during a regional outage (answered 202).",
    registers: [registry],
  });
  const acknowledged = new Counter({
    name: "vqs_messages_acknowledged_total",
    help: "Messages acknowledged by consumers.",
    registers: [registry],
  });
  const storeWriteFailures = new Counter({
    name: "vqs_store_write_failures_total",
    help:
      "Publishes JetStream did not take, by cause: no_space (the disk is full), " +
      "insufficient_resources (a JetStream storage limit), timeout (no answer; also a full disk), " +
      "unavailable (no connection or no stream), other.",
    labelNames: ["cause"],
    registers: [registry],
  });
  for (const cause of ["no_space", "insufficient_resources", "timeout", "unavailable", "other"]) {
    storeWriteFailures.inc({ cause }, 0); // every series exists from the start, for rate()
  }
  const natsConnected = new Gauge({
    name: "vqs_nats_connected",
    help: "1 while this gateway is connected to NATS, else 0.",
    registers: [registry],
  });
  const largeBodyBytes = new Counter({
    name: "vqs_large_body_bytes_total",
    help: "Bytes of large message bodies moved into (direction=in) and out of (out) the body store.",
    labelNames: ["direction"],
    registers: [registry],
  });
  for (const direction of ["in", "out"]) largeBodyBytes.inc({ direction }, 0);
  const largeBodyStreams = new Gauge({
    name: "vqs_large_body_streams",
    help: "Large message bodies being uploaded or downloaded through this gateway now.",
    registers: [registry],
  });
  const largeBodyDownloadsWaiting = new Gauge({
    name: "vqs_large_body_downloads_waiting",
    help:
      "Large bodies of received messages waiting for a download slot (VQS_MAX_LARGE_DOWNLOADS) " +
      "on this gateway; they hold no chunk while they wait.",
    registers: [registry],
  });
  const largeBodyReadAhead = new Gauge({
    name: "vqs_large_body_read_ahead_chunks",
    help:
      "Chunks of large bodies this gateway has asked the body store for or holds, not yet " +
      "handed to a reader (at most VQS_LARGE_BODY_READ_WINDOW per body being read).",
    registers: [registry],
  });
  let largeBodyUsage: (() => ReadonlyMap<string, number>) | null = null;
  new Gauge({
    name: "vqs_large_body_stored_bytes",
    help:
      "Bytes of large message bodies stored per namespace, as this gateway's last sweep of the " +
      "body store found them (bodies still uploading counted in whole 256 KiB chunks).",
    labelNames: ["queue_namespace"],
    registers: [registry],
    collect() {
      if (!largeBodyUsage) return;
      this.reset();
      for (const [ns, bytes] of largeBodyUsage()) this.set({ queue_namespace: ns }, bytes);
    },
  });
  let flowHeld: (() => { readonly messages: number; readonly keys: number }) | null = null;
  new Gauge({
    name: "vqs_flow_held_messages",
    help: "Deliveries this gateway holds because their flow-control key is at its limit.",
    registers: [registry],
    collect() {
      this.set(flowHeld?.().messages ?? 0);
    },
  });
  new Gauge({
    name: "vqs_flow_waiting_keys",
    help: "Flow-control keys with deliveries held on this gateway (no label per key).",
    registers: [registry],
    collect() {
      this.set(flowHeld?.().keys ?? 0);
    },
  });
  const push = pushMetrics(registry, options.maxPushGroups ?? 1000);
  const deadLetters = deadLetterMetrics(registry, options.maxPushGroups ?? 1000);
  const redriven = new Counter({
    name: "vqs_messages_redriven_total",
    help: "Messages moved back from a dead-letter topic (redrive).",
    registers: [registry],
  });
  const tenantRefusals = new Counter({
    name: "vqs_tenant_limit_refusals_total",
    help:
      "Requests answered 429 by a tenant limit, by error code: rate_limited, topic_full, " +
      "storage_quota_exceeded, too_many_requests_in_flight, too_many_waiters, " +
      "concurrency_limit_exceeded.",
    labelNames: ["code"],
    registers: [registry],
  });
  let caps: Readonly<Record<string, { readonly atCap: number }>> = {};
  new Gauge({
    name: "vqs_namespaces_at_cap",
    help:
      "Namespaces at a per-namespace cap of this gateway now, by cap: requests_in_flight, " +
      "waiters, pushes_in_flight.",
    labelNames: ["cap"],
    registers: [registry],
    collect() {
      for (const [cap, c] of Object.entries(caps)) this.set({ cap }, c.atCap);
    },
  });
  const httpSeries = seriesCache<Histogram.Internal<"method" | "route" | "status_code">>();
  const jetstreamSeries = seriesCache<Histogram.Internal<"operation">>();
  return {
    registry,
    natsConnected,
    storeWriteFailures,
    observeHttp: (method, route, statusCode, seconds) =>
      httpSeries(`${method} ${route} ${statusCode}`, () =>
        httpDuration.labels({ method, route, status_code: String(statusCode) }),
      ).observe(seconds),
    observeJetStream: (operation, seconds) =>
      jetstreamSeries(operation, () => jetstreamDuration.labels({ operation })).observe(seconds),
    useGroupStats: (provider) => groupGauges.use(provider),
    useNamespaceStorage: (provider) => namespaceStorage.use(provider),
    tenantLimitRefused: (code) => tenantRefusals.inc({ code }),
    useNamespaceCaps: (c) => {
      caps = c;
    },
    useDeferredCount: (provider) => {
      deferredCount = provider;
    },
    push,
    largeBodyBytes,
    largeBodyStreams,
    largeBodyDownloadsWaiting,
    largeBodyReadAhead,
    useLargeBodyUsage: (provider) => {
      largeBodyUsage = provider;
    },
    useFlowHeld: (provider) => {
      flowHeld = provider;
    },
    observer: {
      published: (duplicate) => (duplicate ? deduplicated : published).inc(),
      deferred: () => deferred.inc(),
      delivered: (deliveryCount) =>
        delivered.inc({ redelivery: deliveryCount > 1 ? "true" : "false" }),
      acknowledged: () => acknowledged.inc(),
      deadLettered: (group) => deadLetters(group),
      redriven: (count) => redriven.inc(count),
    },
  };
}

/**
 * A histogram's series (its child for one set of label values), looked up by a string key: an
 * observation with a labels object makes prom-client hash the labels on every call, and these are
 * observed several times per request. The label values are bounded (routes, methods, status codes,
 * operations), and so is this map.
 */
function seriesCache<T>(): (key: string, make: () => T) => T {
  const series = new Map<string, T>();
  return (key, make) => {
    let s = series.get(key);
    if (s === undefined) {
      s = make();
      series.set(key, s);
    }
    return s;
  };
}

// "queue_namespace", not "namespace": Prometheus's Kubernetes discovery adds its own `namespace`.
const GROUP_LABELS = ["queue_namespace", "topic", "consumer_group"] as const;

/**
 * The per topic and consumer group gauges. They carry topic names, so they are kept off the hot
 * path: filled on scrape from a snapshot read at most every `refreshMs`, with a cap on series
 * (the provider's) and a gauge that says when the cap cut the list.
 */
function perGroupGauges(registry: Registry, refreshMs: number) {
  const snap = snapshots<Awaited<ReturnType<GroupStatsProvider>>>(refreshMs);
  const gauge = (name: string, help: string, value: (s: GroupStat) => number) =>
    new Gauge({
      name,
      help,
      labelNames: GROUP_LABELS,
      registers: [registry],
      async collect() {
        const snapshot = await snap.read();
        this.reset();
        for (const s of snapshot?.stats ?? []) {
          this.set(
            { queue_namespace: s.namespace, topic: s.topic, consumer_group: s.group },
            value(s),
          );
        }
      },
    });
  gauge(
    "vqs_consumer_backlog_messages",
    "Messages the group has not been handed yet.",
    (s) => s.backlog,
  );
  gauge(
    "vqs_consumer_in_flight_messages",
    "Messages handed to the group and not yet acknowledged.",
    (s) => s.inFlight,
  );
  gauge(
    "vqs_consumer_oldest_message_age_seconds",
    "Age of the oldest message the group has not acknowledged (0 when none).",
    (s) => s.oldestAgeSeconds,
  );
  new Gauge({
    name: "vqs_consumer_metrics_truncated",
    help: "1 when VQS_METRICS_MAX_GROUPS cut the per-group series, else 0.",
    registers: [registry],
    async collect() {
      this.set((await snap.read())?.truncated ? 1 : 0);
    },
  });
  return {
    use(p: GroupStatsProvider) {
      snap.use(p);
    },
  };
}

/**
 * A namespace's storage and its quota (the alert VqsNamespaceStorageNearQuota divides them), read
 * from the store at most every `refreshMs`; the provider bounds the series.
 */
function namespaceStorageGauges(registry: Registry, refreshMs: number) {
  const snap = snapshots<NamespaceStorageStat[]>(refreshMs);
  const gauge = (name: string, help: string, value: (s: NamespaceStorageStat) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["queue_namespace"],
      registers: [registry],
      async collect() {
        const stats = await snap.read();
        this.reset();
        for (const s of stats ?? []) this.set({ queue_namespace: s.namespace }, value(s));
      },
    });
  gauge(
    "vqs_namespace_storage_bytes",
    "Bytes all of the namespace's topics hold (what its storage quota counts).",
    (s) => s.bytes,
  );
  gauge(
    "vqs_namespace_storage_limit_bytes",
    "The namespace's storage quota (VQS_NAMESPACE_MAX_BYTES; 0: none).",
    (s) => s.limitBytes,
  );
  return {
    use(p: NamespaceStorageProvider) {
      snap.use(p);
    },
  };
}

/**
 * A value read from the store on scrape, at most every `refreshMs` (one read at a time); the last
 * one is kept while the store is away.
 */
function snapshots<T>(refreshMs: number) {
  let provider: (() => Promise<T>) | null = null;
  let snapshot: { at: number; value: T } | null = null;
  let reading: Promise<void> | null = null;
  return {
    use(p: () => Promise<T>) {
      provider = p;
    },
    async read(): Promise<T | null> {
      if (provider && !(snapshot && Date.now() - snapshot.at < refreshMs)) {
        reading ??= provider()
          .then((value) => void (snapshot = { at: Date.now(), value }))
          .catch(() => undefined) // the store is away: keep the last snapshot
          .finally(() => (reading = null));
        await reading;
      }
      return snapshot?.value ?? null;
    },
  };
}

const PUSH_OUTCOMES: readonly PushOutcome[] = [
  "success",
  "http_3xx",
  "http_4xx",
  "http_5xx",
  "timeout",
  "connection_error",
  "blocked",
];

/**
 * Push metrics. The hot series (count, latency) carry only the outcome; the per-group health
 * (when this gateway last pushed a group's message successfully, and when one last failed) is
 * kept for at most `maxGroups` groups, the ones pushed most recently.
 */
function pushMetrics(registry: Registry, maxGroups: number): PushObserver {
  const requests = new Counter({
    name: "vqs_push_requests_total",
    help: "Push requests by outcome (success, http_3xx, http_4xx, http_5xx, timeout, connection_error, blocked).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "vqs_push_duration_seconds",
    help: "Duration of push requests by outcome.",
    labelNames: ["outcome"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  for (const outcome of PUSH_OUTCOMES) requests.inc({ outcome }, 0);
  const inFlight = new Gauge({
    name: "vqs_pushes_in_flight",
    help: "Push requests this gateway has under way.",
    registers: [registry],
  });
  const health = new Map<string, { labels: Record<string, string>; ok: number; failed: number }>();
  const healthGauge = (
    name: string,
    help: string,
    pick: (h: { ok: number; failed: number }) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: GROUP_LABELS,
      registers: [registry],
      collect() {
        this.reset();
        for (const h of health.values()) {
          const v = pick(h);
          if (v > 0) this.set(h.labels, v / 1000);
        }
      },
    });
  healthGauge(
    "vqs_consumer_push_last_success_timestamp_seconds",
    "When this gateway last pushed one of the group's messages with a 2xx answer (max across gateways).",
    (h) => h.ok,
  );
  healthGauge(
    "vqs_consumer_push_last_failure_timestamp_seconds",
    "When a push of one of the group's messages from this gateway last failed (max across gateways).",
    (h) => h.failed,
  );
  const durationSeries = seriesCache<Histogram.Internal<"outcome">>();
  const healthKeys = new WeakMap<GroupAddress, string>();
  return {
    pushed: (outcome, seconds) => {
      requests.inc({ outcome });
      durationSeries(outcome, () => duration.labels({ outcome })).observe(seconds);
    },
    inFlight: (delta) => inFlight.inc(delta),
    groupOutcome: (group: GroupAddress, outcome, atMs) => {
      // A push feed passes the same address for all its group's pushes: its key made once.
      let key = healthKeys.get(group);
      if (key === undefined) {
        key = JSON.stringify([group.namespace.key, group.topic, group.group]);
        healthKeys.set(group, key);
      }
      let h = health.get(key);
      if (!h) {
        if (health.size >= maxGroups) health.delete(health.keys().next().value!);
        h = {
          labels: {
            queue_namespace: namespaceLabel(group.namespace),
            topic: group.topic,
            consumer_group: group.group,
          },
          ok: 0,
          failed: 0,
        };
      } else {
        health.delete(key); // move to the end: the most recently pushed groups are kept
      }
      health.set(key, h);
      if (outcome === "success") h.ok = atMs;
      else h.failed = atMs;
    },
  };
}

/**
 * Dead-lettered messages: a total, and per source group (bounded like the other per-group
 * series: the most recently seen `maxGroups` groups keep a series; an older one is dropped, which
 * Prometheus reads as a counter reset).
 */
function deadLetterMetrics(registry: Registry, maxGroups: number): (group: GroupAddress) => void {
  const total = new Counter({
    name: "vqs_messages_dead_lettered_total",
    help: "Messages moved to a dead-letter topic after their group's maxDeliveries.",
    registers: [registry],
  });
  const perGroup = new Counter({
    name: "vqs_consumer_dead_lettered_total",
    help: "Messages of the group moved to its dead-letter topic (by this gateway; sum across gateways).",
    labelNames: GROUP_LABELS,
    registers: [registry],
  });
  const seen = new Map<string, Record<string, string>>();
  return (group) => {
    total.inc();
    const key = JSON.stringify([group.namespace.key, group.topic, group.group]);
    let labels = seen.get(key);
    if (labels) {
      seen.delete(key);
    } else {
      if (seen.size >= maxGroups) {
        const [oldest, oldLabels] = seen.entries().next().value!;
        seen.delete(oldest);
        perGroup.remove(oldLabels);
      }
      labels = {
        queue_namespace: namespaceLabel(group.namespace),
        topic: group.topic,
        consumer_group: group.group,
      };
    }
    seen.set(key, labels);
    perGroup.inc(labels);
  };
}

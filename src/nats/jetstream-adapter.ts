// Opens the JetStream side of a gateway on a connection: the broker, its topology cache, the pull
// client and the delay scheduler, and closes them in order.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../logger.js";
import { randomBytes } from "node:crypto";
import { watchConnection } from "./core/connection.js";
import { ServerClock } from "./core/server-clock.js";
import { DelayScheduler } from "./scheduling/delay-scheduler.js";
import { SettingsBucket } from "./settings/settings-bucket.js";
import { ConsumerFeed } from "./pulls/consumer-feed.js";
import { PushFeeds } from "./push-feeds/push-feeds.js";
import { Failover, type FailoverOptions } from "./failover/failover.js";
import { JetStreamAdmin } from "./admin/jetstream-admin.js";
import { JetStreamBodies, MAX_UPLOAD_MS } from "./bodies/jetstream-bodies.js";
import { readGroupStats } from "./queue-state/topics/group-stats.js";
import { JetStreamBroker } from "./queue-state/jetstream-broker.js";
import { CutLeases } from "./queue-state/records/cut-leases.js";
import { GroupEpochs } from "./queue-state/topics/group-epochs.js";
import { PushHealthRecorder } from "./push-feeds/push-health.js";
import { IdempotencyKeys } from "./queue-state/keys/idempotency-keys.js";
import { LeaseRecords } from "./queue-state/records/lease-records.js";
import { JetStreamRecords } from "./queue-state/records/jetstream-records.js";
import { FlowSlotRecords } from "./queue-state/records/flow-slots.js";
import { FLOW_RECORD_TTL_MS } from "../queue/limits.js";
import { PullClient } from "./pulls/pull-client.js";
import { Requests } from "./core/requests.js";
import { TopicSweeper } from "./queue-state/topics/topic-sweeper.js";
import { isCompatibilityServer, supportsMessageTtl } from "./core/server-features.js";
import type { WriteFailureCause } from "./core/errors.js";
import { Topology } from "./queue-state/topics/topology.js";
import { groupNames } from "./core/naming.js";
import { appliesTo, patternPrefix } from "../queue/settings/topic-pattern.js";
import { StorageQuotas, type StorageQuotaOptions } from "./queue-state/usage/storage-quotas.js";
import { JetStreamUsage } from "./queue-state/usage/tenant-usage.js";
import { TenantAdmission, type TenantCaps } from "../queue/admission/stored/tenant-admission.js";
import type { PushScheduler } from "../queue/push-delivery/push-scheduler.js";
import { StoreAdmission, type NamespaceCaps } from "../queue/admission/stored/store-admission.js";

export interface JetStreamAdapterOptions {
  /** Neighbour regions for failover, and how to connect to them. */
  readonly failover: Omit<
    FailoverOptions,
    "home" | "replicas" | "requestTimeoutMs" | "maxAgeMs" | "log" | "now"
  > | null;
  readonly region: string;
  readonly replicas: number;
  readonly requestTimeoutMs: number;
  readonly defaultLeaseMs: number;
  readonly maxAgeMs: number;
  /** Per-message TTL when the server has it ("auto"), or never. */
  readonly messageTtl: "auto" | "off";
  /** Nats-Msg-Id window of topic streams: how long racing publishes of a key share one copy. */
  readonly dedupWindowMs: number;
  readonly consumerInactiveSeconds: number;
  /** The longest lease a receipt handle can carry. */
  readonly maxLeaseMs: number;
  /** Timer moves per second per namespace on this gateway (0: none). */
  readonly timerMovesPerSecondPerNamespace: number;
  /** The fair share due timers' moves run in (delay-scheduler.ts); none: they run at once. */
  readonly timerShare?: <T>(key: string, op: () => Promise<T>) => Promise<T>;
  /** Caps per namespace, each deployment alone (src/queue/admission). */
  readonly namespaceCaps: NamespaceCaps;
  /** Caps per tenant, all its deployments together (src/queue/admission). */
  readonly tenantCaps: TenantCaps;
  /** Storage quotas (see storage-quotas.ts). */
  readonly quotas: Omit<StorageQuotaOptions, "refreshMs" | "region" | "bodyChunkBytes"> & {
    readonly hardMaxBytes: number;
  };
  /** Empty topics not published to for this long are removed. */
  readonly topicIdleMs: number;
  /** Settled topics under a pushed pattern not published to for this long are removed (0: never). */
  readonly settledTopicMs: number;
  readonly log: Logger;
  /** A fixed clock (tests); without one the gateway follows the NATS server's clock. */
  readonly now: (() => number) | null;
  readonly observe: (operation: string, seconds: number) => void;
  /** Told of every publish JetStream did not take, with why. */
  readonly observeWriteFailure: (cause: WriteFailureCause) => void;
  /** Told when the connection to NATS goes down or comes back. */
  readonly onConnectionChange?: (up: boolean) => void;
  /** The large-body store (bodies above the inline limit). */
  readonly largeBodies: {
    /** Chunk publishes in flight per body written. */
    readonly window: number;
    /** Chunks asked for or held per body read, not yet handed over. */
    readonly readWindow: number;
    /** Byte limit of the whole store; 0: none. */
    readonly maxStoreBytes: number;
    /** What one namespace may store; 0: no share. */
    readonly namespaceShareBytes: number;
    /** Bytes per second this gateway takes in; 0: any. */
    readonly ingestBytesPerSecond: number;
    /** An uncommitted body with no message this long after its last chunk is removed. */
    readonly orphanGraceMs: number;
    /** A body's chunks live this long past its message's retention (at most an hour). */
    readonly ttlMarginSeconds: number;
    /** The minimum upload rate and its window: they bound how long an upload may last. */
    readonly minUploadBytesPerSecond: number;
    readonly uploadWindowSeconds: number;
    /** How often the orphan sweep runs. */
    readonly sweepIntervalMs: number;
    /** Bytes moved in or out of the store. */
    readonly observeBytes: (direction: "in" | "out", n: number) => void;
    /** Chunks read ahead for readers of large bodies: a change (a gauge). */
    readonly observeReadAhead?: (chunks: number) => void;
  };
}

export interface JetStreamAdapter {
  /** The clock every time comparison uses: estimated NATS server time (or the fixed one). */
  readonly now: () => number;
  readonly broker: JetStreamBroker;
  /** The records port (VQS_LEASES): what the lease, by-ID lease and push ledgers keep. */
  readonly records: JetStreamRecords;
  /** Leases cut short through their handle, followed by every gateway (VQS_CUT_LEASES). */
  readonly cuts: CutLeases;
  /** Flow control's per-key slot records (VQS_FLOW_SLOTS), the FlowSlotLedger port. */
  readonly flowSlots: FlowSlotRecords;
  /** Regional failover (202 deferred), when neighbour regions are configured. */
  readonly failover: Failover | null;
  readonly scheduler: DelayScheduler;
  /** Removes empty idle topics (runs on its own; `sweep()` for one pass now). */
  readonly sweeper: TopicSweeper;
  /** Idempotency key records (the broker publishes through them). */
  readonly keys: IdempotencyKeys;
  /** Consumer settings: the region's documents, followed in memory. */
  readonly settings: SettingsBucket;
  /** Seeing and steering topics and groups (the management API's JetStream side). */
  readonly admin: JetStreamAdmin;
  /** Push health as pushes report it, written every few seconds (`flush()` writes it now). */
  readonly pushHealth: Pick<PushHealthRecorder, "flush" | "notePushOutcome">;
  /**
   * Starts pulling for every pushed group of the region, handing each delivery to `scheduler`,
   * which also hears of every acknowledgement through this gateway (it frees a push's slot).
   */
  startPush(scheduler: PushScheduler): void;
  /** Largest payload the server accepts with room left for our headers. */
  readonly maxPayloadBytes: number;
  /** Storage quotas per topic and namespace (checked by the broker on publish). */
  readonly quotas: StorageQuotas;
  /** Caps per tenant (topics, groups, settings, bytes, deployments). */
  readonly tenants: TenantAdmission;
  /** What a namespace and its tenant may create: topics, groups, settings documents. */
  readonly admission: StoreAdmission;
  /** Bodies above the inline limit, in their own stream. */
  readonly bodies: JetStreamBodies;
  /** Per-group figures of this region, at most `max` groups. */
  groupStats(max: number): ReturnType<typeof readGroupStats>;
  close(): Promise<void>;
}

/**
 * The consumers of the groups that pushed `prefix*` settings give a topic, or null when none
 * does (such topics are short-lived: topic-sweeper.ts removes them once settled).
 */
function pushedPatternConsumers(
  settings: SettingsBucket,
  region: string,
  namespaceKey: string,
  topic: string,
): string[] | null {
  let consumers: string[] | null = null;
  for (const e of settings.entries()) {
    if (e.namespace.key !== namespaceKey || patternPrefix(e.topic) === null) continue;
    if (!appliesTo(e.topic, topic) || !settings.effective(e.namespace, topic, e.group)?.push) {
      continue;
    }
    const names = groupNames(region, { namespace: e.namespace, topic, group: e.group });
    (consumers ??= []).push(names.consumer);
  }
  return consumers;
}

/**
 * Room kept in a NATS message for its headers: the gateway's own (about 2.5 KiB at most: type,
 * trace state, a dead-letter origin, the JetStream expectations), W3C baggage (up to 8 KiB) and
 * the message's own headers (LIMITS.messageHeaders: 8 KiB and a tab each), with room to spare.
 */
export const HEADER_RESERVE = 24 * 1024;

/** How stale a namespace's storage usage may be when a publish checks its quotas. */
const USAGE_REFRESH_MS = 1000;

/** A large body's chunks: small enough for any server's max_payload, few enough per body. */
const BODY_CHUNK_BYTES = 256 * 1024;

/**
 * The body stream's max age beyond the longest retention: the largest chunk TTL margin allowed
 * (an hour), the longest upload (its chunks' TTL counts from the latest its message may be
 * published), the longest request timeout, and a second of rounding.
 */
const BODY_AGE_MARGIN_MS = 3_600_000 + MAX_UPLOAD_MS + 60_000 + 1000;

/** How long a closing gateway waits for pushes under way. */
const PUSH_DRAIN_MS = 10_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export async function openJetStreamAdapter(
  nc: NatsConnection,
  o: JetStreamAdapterOptions,
): Promise<JetStreamAdapter> {
  const jsm = await jetstreamManager(nc, { timeout: o.requestTimeoutMs, checkAPI: false });
  const js = jetstream(nc, { timeout: o.requestTimeoutMs });
  const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
  const messageTtl = o.messageTtl === "auto" && supportsMessageTtl(nc.info?.version);
  if (isCompatibilityServer(nc.info?.version)) {
    o.log.warn(
      { natsVersion: nc.info?.version },
      "nats-server is older than 2.10: supported for compatibility, but run 2.11 or newer (docs/operations.md, 'nats-server versions')",
    );
  }
  o.log.info(
    { natsVersion: nc.info?.version, messageTtl },
    messageTtl
      ? "per-message TTL on: storage is freed as messages expire"
      : "per-message TTL off: storage is freed at the streams' max age",
  );
  const clock = new ServerClock();
  const now = o.now ?? clock.now;
  let settingsStore: SettingsBucket | null = null;
  const usage = new JetStreamUsage(jsm, o.region, () => settingsStore);
  const tenants = new TenantAdmission(o.tenantCaps, usage, now);
  const admission = new StoreAdmission(o.namespaceCaps, usage, tenants, now);
  const topology = new Topology(jsm, {
    now,
    admission,
    allowMsgTtl: messageTtl,
    replicas: o.replicas,
    maxAgeMs: o.maxAgeMs,
    dedupWindowMs: o.dedupWindowMs,
    maxMsgBytes: maxPayload,
    ackWaitMs: o.defaultLeaseMs,
    inactiveThresholdMs: o.consumerInactiveSeconds * 1000,
    topicHardMaxBytes: o.quotas.hardMaxBytes,
  });
  const bodyChunkBytes = Math.min(BODY_CHUNK_BYTES, maxPayload - HEADER_RESERVE);
  const quotas = new StorageQuotas(jsm, {
    ...o.quotas,
    refreshMs: USAGE_REFRESH_MS,
    region: o.region,
    // Large bodies count against the quotas where there is a body store (per-message TTL).
    bodyChunkBytes: messageTtl ? bodyChunkBytes : 0,
  });
  const pulls = new PullClient(nc);
  const isConnected = watchConnection(nc, o.onConnectionChange);
  const scheduler = new DelayScheduler({
    js,
    jsm,
    topology,
    pulls,
    log: o.log,
    now,
    requestTimeoutMs: o.requestTimeoutMs,
    maxAgeMs: o.maxAgeMs,
    messageTtl,
    movesPerSecondPerNamespace: o.timerMovesPerSecondPerNamespace,
    ...(o.timerShare ? { share: o.timerShare } : {}),
  });
  const recordTtlMs = o.maxAgeMs + 2 * 3_600_000;
  const records = new LeaseRecords(js, {
    replicas: o.replicas,
    ttlMs: recordTtlMs,
    timeoutMs: o.requestTimeoutMs,
  });
  const recordStore = new JetStreamRecords({
    bucket: records,
    region: o.region,
    ttlMs: recordTtlMs,
    observe: o.observe,
  });
  const flowSlots = new FlowSlotRecords(js, {
    replicas: o.replicas,
    ttlMs: FLOW_RECORD_TTL_MS,
    timeoutMs: o.requestTimeoutMs,
    region: o.region,
    observe: o.observe,
  });
  const keys = new IdempotencyKeys({
    js,
    jsm,
    scheduler,
    now,
    requestTimeoutMs: o.requestTimeoutMs,
    recordTtl: messageTtl,
  });
  const requests = new Requests(nc);
  // Waiting pulls of the pusher and of long polling share one inbox subscription.
  const consumerFeed = new ConsumerFeed(nc, { expiresMs: 15_000, heartbeatMs: 5_000 });
  const cuts = new CutLeases(nc, js, {
    replicas: o.replicas,
    maxLeaseMs: o.maxLeaseMs,
    timeoutMs: o.requestTimeoutMs,
    log: o.log,
    region: o.region,
    observe: o.observe,
  });
  await cuts.start();
  const epochs = new GroupEpochs(nc, js, {
    replicas: o.replicas,
    timeoutMs: o.requestTimeoutMs,
    log: o.log,
  });
  await epochs.start();
  const pushHealth = new PushHealthRecorder(records, o.region, o.log);
  const settings = new SettingsBucket(nc, js, {
    region: o.region,
    replicas: o.replicas,
    timeoutMs: o.requestTimeoutMs,
    log: o.log,
    observe: o.observe,
  });
  await settings.start();
  settingsStore = settings;
  let pushFeeds: PushFeeds | undefined;
  let pushScheduler: PushScheduler | undefined;
  const broker = new JetStreamBroker({
    epochs,
    requests,
    feed: consumerFeed,
    keys,
    messageTtl,
    nc,
    js,
    jsm,
    topology,
    quotas,
    tenants,
    pulls,
    scheduler,
    region: o.region,
    requestTimeoutMs: o.requestTimeoutMs,
    observe: o.observe,
    observeWriteFailure: o.observeWriteFailure,
    isConnected,
    // Given when pushing starts: an acknowledgement frees its push's slot.
    acked: (group, seq) => pushScheduler?.settled(group, seq),
  });
  const failover =
    o.failover && o.failover.neighbours.length > 0
      ? new Failover({
          ...o.failover,
          home: o.region,
          replicas: o.replicas,
          requestTimeoutMs: o.requestTimeoutMs,
          maxAgeMs: o.maxAgeMs,
          log: o.log,
          now,
        })
      : null;
  failover?.startRelocating({ js, topology, scheduler, keys, messageTtl, isConnected });
  if (!o.now) {
    const key = `clock.${randomBytes(8).toString("hex")}`;
    await clock.sync(await records.bucket(), key).catch((err: unknown) => {
      o.log.warn({ err }, "could not read the NATS server clock yet; using the local clock");
    });
    if (Math.abs(clock.offsetMs) > 1000) {
      o.log.warn({ offsetMs: clock.offsetMs }, "this host's clock differs from the NATS server's");
    }
    clock.start(() => records.bucket(), key);
  }
  const bodies = new JetStreamBodies({
    jsm,
    requests,
    region: o.region,
    replicas: o.replicas,
    unsupportedReason: messageTtl
      ? null
      : supportsMessageTtl(nc.info?.version)
        ? "Bodies above the inline limit need per-message TTL, which this gateway has off (VQS_MESSAGE_TTL=off)."
        : `Bodies above the inline limit need nats-server 2.11 or newer (per-message TTL, batch reads); this region runs ${nc.info?.version ?? "an unknown version"}.`,
    chunkBytes: bodyChunkBytes,
    window: o.largeBodies.window,
    readWindow: o.largeBodies.readWindow,
    maxAgeMs: o.maxAgeMs + BODY_AGE_MARGIN_MS,
    maxStoreBytes: o.largeBodies.maxStoreBytes,
    namespaceShareBytes: o.largeBodies.namespaceShareBytes,
    tenantDeployments: (key) => tenants.deployments(key),
    ingestBytesPerSecond: o.largeBodies.ingestBytesPerSecond,
    requestTimeoutMs: o.requestTimeoutMs,
    orphanGraceMs: o.largeBodies.orphanGraceMs,
    ttlMarginSeconds: o.largeBodies.ttlMarginSeconds,
    minUploadBytesPerSecond: o.largeBodies.minUploadBytesPerSecond,
    uploadWindowSeconds: o.largeBodies.uploadWindowSeconds,
    sweepIntervalMs: o.largeBodies.sweepIntervalMs,
    now,
    log: o.log,
    observeBytes: o.largeBodies.observeBytes,
    ...(o.largeBodies.observeReadAhead ? { observeReadAhead: o.largeBodies.observeReadAhead } : {}),
  });
  bodies.start();
  const sweeper = new TopicSweeper({
    jsm,
    log: o.log,
    now,
    idleMs: o.topicIdleMs,
    settledMs: o.settledTopicMs,
    pushedConsumers: (namespaceKey, topic) =>
      pushedPatternConsumers(settings, o.region, namespaceKey, topic),
    forgetRecords: async (stream) => {
      await records.forget(jsm, `${stream}.>`);
      await flowSlots.forget(jsm, `${stream}.>`);
    },
    bodies,
  });
  sweeper.start();
  return {
    now,
    broker,
    records: recordStore,
    cuts,
    flowSlots,
    failover,
    scheduler,
    sweeper,
    keys,
    settings,
    admin: new JetStreamAdmin({
      jsm,
      topology,
      records,
      flowSlots,
      epochs,
      region: o.region,
      bodies,
      largeBodies: quotas,
    }),
    pushHealth,
    maxPayloadBytes: maxPayload - HEADER_RESERVE,
    quotas,
    tenants,
    admission,
    bodies,
    groupStats: (max) => readGroupStats(jsm, o.region, max, now),
    startPush(scheduler) {
      pushScheduler ??= scheduler;
      pushFeeds ??= new PushFeeds({
        scheduler,
        settings,
        nc,
        jsm,
        topology,
        feed: consumerFeed,
        region: o.region,
        log: o.log,
        groupEpoch: (names) => epochs.epoch(names),
      });
      pushFeeds.start();
    },
    async close() {
      // Pushes under way get a moment to finish; the rest come back when their lease ends.
      await Promise.race([pushFeeds?.stop(), sleep(PUSH_DRAIN_MS)]);
      consumerFeed.close();
      clock.stop();
      bodies.stop();
      cuts.stop();
      epochs.stop();
      await pushHealth.stop();
      settings.stop();
      const stopping = Promise.all([scheduler.stop(), sweeper.stop()]);
      pulls.close();
      await Promise.all([stopping, failover?.close()]);
      requests.close();
    },
  };
}

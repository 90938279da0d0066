// Which groups are pushed, and a waiting pull on each of them. Every gateway runs this for every
// pushed group of the region (no gateway is special): from the settings documents it follows in
// memory, with `prefix*` patterns expanded to the namespace's topics (existing ones, and new ones
// as JetStream announces their streams), it opens a feed on each pushed group's durable consumer
// and hands what arrives to the push scheduler (src/queue/push-delivery/push-scheduler.ts), which
// decides what is pushed when. JetStream shares the work: the consumer's `max_ack_pending` is the
// group's `push.maxConcurrency`, so all gateways together never have more of its messages out
// than that; each gateway pulls only what the scheduler asks for. Its `ack_wait` is the push
// lease, so a push needs no lease request of its own.
import type { ConsumerUpdateConfig, JetStreamManager } from "@nats-io/jetstream";
import { nanos, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";
import type { GroupAddress } from "../../queue/namespace.js";
import type { GroupPushes } from "../../queue/push-delivery/group-pushes.js";
import { pushLeaseMs } from "../../queue/push-delivery/push-lease.js";
import { pushedMaxAckPending } from "../../queue/push-delivery/push-cap.js";
import type { PushScheduler } from "../../queue/push-delivery/push-scheduler.js";
import type { PushedSettings } from "../../queue/push-delivery/pusher.js";
import { pushedGroups } from "../../queue/push-delivery/pushed-groups.js";
import type { SettingsStore } from "../../queue/settings/settings-store.js";
import { patternPrefix } from "../../queue/settings/topic-pattern.js";
import type { ConsumerFeed, FeedHandle } from "../pulls/consumer-feed.js";
import { groupNames, type GroupNames } from "../core/naming.js";
import { toDelivery } from "../messages/deliveries.js";
import { ackWaitMsOf, type PushedConsumer, type Topology } from "../queue-state/topics/topology.js";

export interface PushFeedsDeps {
  readonly settings: SettingsStore;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly topology: Topology;
  readonly feed: ConsumerFeed;
  readonly region: string;
  readonly log: Logger;
  /** Takes what the feeds bring and decides what is pushed when. */
  readonly scheduler: Pick<PushScheduler, "join">;
  /** How often everything is looked at again (topics of patterns, missing topics, caps). */
  readonly resyncMs?: number;
  /** A group's epoch (moved by a seek or a removal): a held message of an older one is dropped. */
  readonly groupEpoch: (names: GroupNames) => number;
}

const STREAM_CREATED = "$JS.EVENT.ADVISORY.STREAM.CREATED.>";
const STREAM_DELETED = "$JS.EVENT.ADVISORY.STREAM.DELETED.>";

/** After a pushed group's consumer went away, how long until it is looked at again. */
const GONE_LOOK_AGAIN_MS = 1000;

export class PushFeeds {
  readonly #d: PushFeedsDeps;
  readonly #runners = new Map<string, GroupRunner>();
  /** Groups no longer pushed whose consumer still has a push lease as its `ack_wait`. */
  readonly #restoring = new Map<string, GroupNames>();
  /** The region's topics by namespace key, for patterns (filled by listing and by advisories). */
  readonly #topics = new Map<string, Set<string>>();
  /** Stream name -> its namespace key and topic, to drop a removed topic from the index. */
  readonly #streamTopics = new Map<string, readonly [string, string]>();
  #listed = false;
  #timer: NodeJS.Timeout | null = null;
  #soon: NodeJS.Timeout | null = null;
  #advisories: Subscription | null = null;
  #deletions: Subscription | null = null;
  #unlisten: (() => void) | null = null;
  #running = false;
  #resyncing: Promise<void> = Promise.resolve();

  constructor(deps: PushFeedsDeps) {
    this.#d = deps;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#unlisten = this.#d.settings.onChange(() => this.#resyncSoon());
    // A topic created after a pattern was stored: its stream is announced at once.
    this.#advisories = this.#d.nc.subscribe(STREAM_CREATED, {
      callback: (_err, msg) => this.#onStreamCreated(msg),
    });
    // Short-lived topics come and go by the thousand (topic-sweeper.ts): a removed one's groups
    // stop being fed at once rather than at the next listing.
    this.#deletions = this.#d.nc.subscribe(STREAM_DELETED, {
      callback: (_err, msg) => this.#onStreamDeleted(msg),
    });
    const every = this.#d.resyncMs ?? 10_000;
    this.#timer = setInterval(() => this.#resyncSoon(true), every);
    this.#timer.unref();
    this.#resyncSoon(true);
  }

  /** Stops pulling; pushes under way finish (bounded by their timeout) before this resolves. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#unlisten?.();
    this.#advisories?.unsubscribe();
    this.#deletions?.unsubscribe();
    if (this.#timer) clearInterval(this.#timer);
    if (this.#soon) clearTimeout(this.#soon);
    await this.#resyncing;
    const runners = [...this.#runners.values()];
    this.#runners.clear();
    for (const r of runners) r.close();
    await Promise.all(runners.map((r) => r.drained()));
  }

  /** Pushed groups this gateway feeds now (for tests and metrics). */
  get groups(): number {
    return this.#runners.size;
  }

  /** A group's consumer went away (deleted, or made again by a seek): look again in a moment. */
  #lookAgain(): void {
    setTimeout(() => this.#resyncSoon(), GONE_LOOK_AGAIN_MS).unref();
  }

  #resyncSoon(relist = false): void {
    if (relist) this.#listed = false;
    if (this.#soon || !this.#running) return;
    this.#soon = setTimeout(() => {
      this.#soon = null;
      this.#resyncing = this.#resyncing.then(() => this.#resync());
    }, 50);
    this.#soon.unref();
  }

  async #resync(): Promise<void> {
    if (!this.#running) return;
    try {
      const desired = await this.#desired();
      for (const [key, runner] of this.#runners) {
        if (desired.has(key)) continue;
        this.#runners.delete(key);
        runner.close();
        void runner.drained().then(async () => {
          if (!(await uncap(this.#d, runner.names)) && !this.#runners.has(key)) {
            this.#restoring.set(key, runner.names);
          }
        });
      }
      for (const [key, names] of this.#restoring) {
        if (desired.has(key) || (await uncap(this.#d, names))) this.#restoring.delete(key);
      }
      for (const [key, want] of desired) {
        let runner = this.#runners.get(key);
        if (!runner) {
          runner = new GroupRunner(this.#d, want.group, want.settings, () => this.#lookAgain());
          this.#runners.set(key, runner);
        }
        await runner.ensure(want.settings);
      }
    } catch (err) {
      this.#d.log.warn({ err }, "push: could not look at the pushed groups; trying again soon");
    }
  }

  /** Every concrete (namespace, topic, group) whose effective settings push. */
  async #desired(): Promise<Map<string, { group: GroupAddress; settings: PushedSettings }>> {
    const settings = this.#d.settings;
    if (!this.#listed && [...settings.entries()].some((e) => patternPrefix(e.topic) !== null)) {
      await this.#listTopics();
    }
    return pushedGroups(settings, (ns) => this.#topics.get(ns.key) ?? []);
  }

  /** Reads every topic of the region from its streams' descriptions. */
  async #listTopics(): Promise<void> {
    this.#topics.clear();
    this.#streamTopics.clear();
    for await (const info of this.#d.jsm.streams.list()) {
      this.#noteTopic(info.config.name, info.config.description);
    }
    this.#listed = true;
  }

  #onStreamCreated(msg: Msg): void {
    const stream = msg.subject.slice(STREAM_CREATED.length - 1);
    if (!/^VQS_[0-9a-f]{32}$/.test(stream)) return;
    void this.#d.jsm.streams
      .info(stream)
      .then((info) => {
        if (this.#noteTopic(stream, info.config.description)) this.#resyncSoon();
      })
      .catch(() => undefined);
  }

  #onStreamDeleted(msg: Msg): void {
    const stream = msg.subject.slice(STREAM_DELETED.length - 1);
    // Made again by a publish, its consumers are new ones: nothing cached of the old may stay.
    if (/^VQS_[0-9a-f]{32}$/.test(stream)) this.#d.topology.forgetStream(stream);
    const known = this.#streamTopics.get(stream);
    if (!known) return;
    this.#streamTopics.delete(stream);
    const topics = this.#topics.get(known[0]);
    topics?.delete(known[1]);
    if (topics?.size === 0) this.#topics.delete(known[0]);
    this.#resyncSoon();
  }

  /** Adds a topic stream's identity to the index; true when it is one of this region's. */
  #noteTopic(stream: string, description: string | undefined): boolean {
    let d: { vqs?: number; region?: string; namespace?: string; topic?: string };
    try {
      d = JSON.parse(description ?? "") as typeof d;
    } catch {
      return false;
    }
    if (d.vqs !== 1 || d.region !== this.#d.region || !d.namespace || !d.topic) return false;
    let topics = this.#topics.get(d.namespace);
    if (!topics) this.#topics.set(d.namespace, (topics = new Set()));
    topics.add(d.topic);
    this.#streamTopics.set(stream, [d.namespace, d.topic]);
    return true;
  }
}

/**
 * A group no longer pushed: its consumer has no cap again and the default `ack_wait` (as a polled
 * group's). True once done (or the consumer is gone); false while messages are out, whose
 * leases a change of `ack_wait` would move (see `GroupRunner.#setConfig`).
 */
async function uncap(d: PushFeedsDeps, names: GroupNames): Promise<boolean> {
  try {
    const info = await d.jsm.consumers.info(names.stream, names.consumer);
    const change: Partial<ConsumerUpdateConfig> = {};
    if (info.config.max_ack_pending !== -1) change.max_ack_pending = -1;
    const defaultMs = d.topology.defaultAckWaitMs;
    let ackWaitMs = ackWaitMsOf(info.config);
    if (ackWaitMs !== defaultMs && info.num_ack_pending === 0) {
      change.ack_wait = nanos(defaultMs);
    }
    if (Object.keys(change).length > 0) {
      const updated = await d.jsm.consumers.update(names.stream, names.consumer, change);
      ackWaitMs = ackWaitMsOf(updated.config);
    }
    d.topology.noteAckWait(names, ackWaitMs);
    return ackWaitMs === defaultMs;
  } catch {
    // Gone, or the store is away: a consumer made later has neither cap nor push lease.
    return true;
  }
}

/** A reply that may come after the connection closed (a stop, a renewal's last tick): ignored. */
function respond(msg: Msg, what: string): void {
  try {
    msg.respond(what);
  } catch {
    // Closed or draining: the message comes back when its lease ends.
  }
}

/**
 * One pushed group on this gateway: its consumer's cap and lease, and a feed sized to what the
 * push scheduler asks for; what the feed brings goes to the scheduler (its GroupPushes).
 */
class GroupRunner {
  readonly #d: PushFeedsDeps;
  readonly names: GroupNames;
  readonly #pushes: GroupPushes;
  #handle: FeedHandle | null = null;
  #cap: number | null = null;
  /** The consumer's `ack_wait` as last seen or set. */
  #ackWaitMs: number | null = null;
  #closed = false;
  /** The lease and cap last noted in the topology for receives that make the consumer. */
  #noted: PushedConsumer | null = null;
  readonly #lookAgain: () => void;

  constructor(
    d: PushFeedsDeps,
    group: GroupAddress,
    settings: PushedSettings,
    lookAgain: () => void,
  ) {
    this.#d = d;
    this.#lookAgain = lookAgain;
    this.names = groupNames(d.region, group);
    const names = this.names;
    this.#pushes = d.scheduler.join(group, settings, {
      wake: () => this.#handle?.wake(),
      epoch: () => d.groupEpoch(names),
    });
  }

  /** Opens the feed once the topic exists, and keeps the consumer's cap and lease as configured. */
  async ensure(settings: PushedSettings): Promise<void> {
    if (this.#closed) return;
    this.#pushes.update(settings);
    const pushed = {
      ackWaitMs: pushLeaseMs(settings.push),
      maxAckPending: pushedMaxAckPending(settings),
    };
    if (
      this.#noted?.ackWaitMs !== pushed.ackWaitMs ||
      this.#noted.maxAckPending !== pushed.maxAckPending
    ) {
      this.#d.topology.notePushed(this.names, pushed); // a receive here makes the consumer so too
      this.#noted = pushed;
    }
    if (!this.#handle) {
      // A topic that does not exist yet is looked at again later (or when it is created).
      if (!(await this.#d.topology.ensureConsumer(this.names, pushed))) return;
      await this.#setConfig(settings);
      if (this.#closed) return;
      this.#handle = this.#d.feed.open(this.names.stream, this.names.consumer, {
        demand: () => (this.#closed ? 0 : this.#pushes.demand()),
        take: (msg) => this.#take(msg),
        gone: () => this.#gone(),
      });
    } else if (
      this.#cap !== pushedMaxAckPending(settings) ||
      this.#ackWaitMs !== pushLeaseMs(settings.push)
    ) {
      await this.#setConfig(settings);
    }
    this.#handle.wake();
  }

  /** Messages this gateway pulled and holds are given back; no more pulls. */
  close(): void {
    this.#closed = true;
    this.#pushes.close();
    if (this.#noted) this.#d.topology.forgetPushed(this.names, this.#noted);
    this.#handle?.close();
    this.#handle = null;
  }

  /** Resolves once no push of this group is under way. */
  drained(): Promise<void> {
    return this.#pushes.drained();
  }

  /**
   * `max_ack_pending` = `maxConcurrency` (more for a group limited per key: push-cap.ts), and `ack_wait` = the push lease, so JetStream's own
   * lease is the push's and no push sets one. JetStream measures a `-NAK {delay}` from the
   * `ack_wait` of the moment the lease ends, so changing `ack_wait` would move every lease out
   * (a handler's extension, a retry's wait) by the difference: it is changed only while none is
   * out, tried again at every look until then (pushes meanwhile set their lease themselves).
   */
  async #setConfig(settings: PushedSettings): Promise<void> {
    const cap = pushedMaxAckPending(settings);
    const leaseMs = pushLeaseMs(settings.push);
    const info = await this.#d.jsm.consumers.info(this.names.stream, this.names.consumer);
    const change: Partial<ConsumerUpdateConfig> = {};
    if (info.config.max_ack_pending !== cap) change.max_ack_pending = cap;
    let ackWaitMs = ackWaitMsOf(info.config);
    if (ackWaitMs !== leaseMs && info.num_ack_pending === 0) change.ack_wait = nanos(leaseMs);
    if (Object.keys(change).length > 0) {
      const updated = await this.#d.jsm.consumers.update(
        this.names.stream,
        this.names.consumer,
        change,
      );
      ackWaitMs = ackWaitMsOf(updated.config);
    }
    this.#d.topology.noteAckWait(this.names, ackWaitMs);
    this.#cap = cap;
    this.#ackWaitMs = ackWaitMs;
    this.#pushes.noteLease(ackWaitMs);
  }

  #take(msg: Msg): void {
    const delivery = toDelivery(msg);
    if (!delivery) {
      msg.respond("+TERM"); // not a queue message: take it out of the way
      return;
    }
    this.#pushes.take({
      delivery,
      renew: () => respond(msg, "+WPI"),
      release: (delayMs = 0) =>
        respond(
          msg,
          delayMs > 0
            ? `-NAK ${JSON.stringify({ delay: Math.round(delayMs) * 1_000_000 })}`
            : "-NAK",
        ),
    });
  }

  /** The consumer (or its topic) went away: open again at the next look, if still wanted. */
  #gone(): void {
    this.#pushes.gone(); // their consumer is gone, and their leases with it
    this.#d.topology.forgetConsumer(this.names);
    this.#handle?.close();
    this.#handle = null;
    this.#lookAgain();
  }
}

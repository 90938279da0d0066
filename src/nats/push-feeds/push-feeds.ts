// Which groups are pushed, and a waiting pull on each of them. Every gateway runs this for every
// pushed group of the region (no gateway is special): from the settings documents it follows in
// memory, with `prefix*` patterns expanded to the namespace's topics (existing ones, and new ones
// as JetStream announces their streams), it opens a feed on each pushed group's durable consumer
// and hands what arrives to the pusher. JetStream shares the work: the consumer's
// `max_ack_pending` is the group's `push.maxConcurrency`, so all gateways together never have
// more of its messages out than that; each gateway pulls only what it can push at once. Its
// `ack_wait` is the push lease, so a push needs no lease request of its own.
import type { ConsumerUpdateConfig, JetStreamManager } from "@nats-io/jetstream";
import { nanos, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";
import type { Delivery } from "../../queue/broker.js";
import type { GroupAddress, Namespace } from "../../queue/namespace.js";
import { pushLeaseMs } from "../../queue/push-delivery/push-lease.js";
import type { PushedSettings } from "../../queue/push-delivery/pusher.js";
import type { SettingsStore } from "../../queue/settings/settings-store.js";
import { appliesTo, patternPrefix } from "../../queue/settings/topic-pattern.js";
import type { ConsumerFeed, FeedHandle } from "../pulls/consumer-feed.js";
import { groupNames, type GroupNames } from "../core/naming.js";
import { toDelivery } from "../messages/deliveries.js";
import { ackWaitMsOf, type PushedConsumer, type Topology } from "../queue-state/topology.js";
import { NamespaceCounts } from "../../queue/admission/namespace-counts.js";
import { tenantKeyOf } from "../../queue/admission/tenant.js";

export interface PushFeedsDeps {
  readonly settings: SettingsStore;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly topology: Topology;
  readonly feed: ConsumerFeed;
  readonly region: string;
  readonly log: Logger;
  /** Pushes one delivery; resolves once it is settled or released. */
  readonly push: (group: GroupAddress, d: Delivery, settings: PushedSettings) => Promise<void>;
  /** How often everything is looked at again (topics of patterns, missing topics, caps). */
  readonly resyncMs?: number;
  /** Pushes in flight per namespace on this gateway, with its cap (0: none). */
  readonly pushesInFlight?: NamespaceCounts;
  /** A group's epoch (moved by a seek or a removal): a held message of an older one is dropped. */
  readonly groupEpoch: (names: GroupNames) => number;
  /**
   * Counts a release of a held message that was never pushed (a push holdback), so that its
   * next push gives the delivery count the handler would have seen had it not been held.
   */
  readonly noteHoldback: (group: GroupAddress, streamSeq: number) => Promise<void>;
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
  readonly #shares: NamespaceShares;

  constructor(deps: PushFeedsDeps) {
    this.#d = deps;
    this.#shares = new NamespaceShares(deps.pushesInFlight ?? new NamespaceCounts(0));
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

  /**
   * A message of a pushed group was acknowledged through this gateway, its acknowledgement
   * confirmed by the store: if this gateway is pushing it, the push's slots (the namespace's and
   * the group's) are free now, before the endpoint's answer arrives. A push's handler acknowledges
   * before it answers (`@vercel/queue` does), so the next message goes out while the endpoint
   * finishes its answer, as JetStream's own `max_ack_pending` already lets it.
   */
  settled(group: GroupAddress, streamSeq: number): void {
    this.#runners.get(runnerKey(group))?.settled(streamSeq);
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
        this.#shares.leave(runner);
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
          runner = new GroupRunner(this.#d, want.group, want.settings, this.#shares, () =>
            this.#lookAgain(),
          );
          this.#runners.set(key, runner);
          this.#shares.join(runner);
        }
        await runner.ensure(want.settings);
      }
    } catch (err) {
      this.#d.log.warn({ err }, "push: could not look at the pushed groups; trying again soon");
    }
  }

  /** Every concrete (namespace, topic, group) whose effective settings push. */
  async #desired(): Promise<Map<string, { group: GroupAddress; settings: PushedSettings }>> {
    const entries = [...this.#d.settings.entries()];
    if (!this.#listed && entries.some((e) => patternPrefix(e.topic) !== null)) {
      await this.#listTopics();
    }
    const out = new Map<string, { group: GroupAddress; settings: PushedSettings }>();
    const add = (namespace: Namespace, topic: string, group: string) => {
      const settings = this.#d.settings.effective(namespace, topic, group);
      if (!settings?.push) return;
      const address = { namespace, topic, group };
      out.set(runnerKey(address), { group: address, settings: settings as PushedSettings });
    };
    for (const e of entries) {
      if (patternPrefix(e.topic) === null) {
        add(e.namespace, e.topic, e.group);
        continue;
      }
      for (const topic of this.#topics.get(e.namespace.key) ?? []) {
        if (appliesTo(e.topic, topic)) add(e.namespace, topic, e.group);
      }
    }
    return out;
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

/**
 * A namespace's pushes on this gateway share its cap (VQS_MAX_PUSHES_IN_FLIGHT_PER_NAMESPACE). Below
 * it, a pushed group pulls at most its share of the free slots (rounded up); at it, each group
 * pulls one message ahead and holds it. A pulled message is pushed only while the namespace is
 * under its cap, and a freed slot goes to the oldest message held in the namespace (by the time it
 * became visible), whichever group it is of: the namespace's groups are served in publish order,
 * as one queue would serve them, and a freed slot is filled without waiting for a pull. So a
 * namespace whose endpoint never answers holds at most the cap of this gateway's pushes (and one
 * held message per group, whose lease is renewed when it is pushed). A push's slot frees at its
 * endpoint's answer or at its message's acknowledgement through this gateway, whichever is first.
 */
class NamespaceShares {
  readonly counts: NamespaceCounts;
  readonly #groups = new Map<string, Set<GroupRunner>>();

  constructor(counts: NamespaceCounts) {
    this.counts = counts;
  }

  join(r: GroupRunner): void {
    const ns = r.namespaceKey;
    let set = this.#groups.get(ns);
    if (!set) this.#groups.set(ns, (set = new Set()));
    set.add(r);
  }

  leave(r: GroupRunner): void {
    const set = this.#groups.get(r.namespaceKey);
    set?.delete(r);
    if (set?.size === 0) this.#groups.delete(r.namespaceKey);
  }

  /**
   * What one of the namespace's groups may pull now, given what it could pull on its own and
   * how many of its messages it holds: its share of the free slots, or one to hold at the cap.
   */
  demand(ns: string, own: number, held: number): number {
    const cap = this.counts.cap;
    if (cap === 0 || own <= 0) return own;
    const free = this.counts.room(ns);
    // Not a group's last slot of its own: what it holds, another gateway with room cannot push.
    if (free <= 0) return held === 0 && own > 1 ? 1 : 0;
    return Math.min(own, Math.ceil(free / (this.#groups.get(ns)?.size ?? 1)));
  }

  /** Pushes held messages, oldest first across the namespace's groups, while slots are free. */
  dispatch(ns: string): void {
    const groups = this.#groups.get(ns);
    if (!groups) return;
    const cap = this.counts.cap;
    while (cap === 0 || this.counts.room(ns) > 0) {
      let oldest: GroupRunner | null = null;
      let oldestAt = Infinity;
      for (const g of groups) {
        const at = g.heldOrder();
        if (at !== null && at < oldestAt) [oldest, oldestAt] = [g, at];
      }
      if (!oldest) return;
      oldest.pushHeld();
    }
  }

  started(ns: string): void {
    this.counts.add(ns);
  }

  /** A push ended: the oldest held message takes the slot, and every group may pull again. */
  ended(ns: string): void {
    const wasFull = this.counts.cap > 0 && this.counts.room(ns) <= 0;
    this.counts.release(ns);
    if (!wasFull) return this.dispatch(ns);
    // The slot may be the tenant's: each of its namespaces here may take it.
    const tenant = tenantKeyOf(ns);
    const siblings = [...this.#groups.keys()].filter((k) => k === ns || tenantKeyOf(k) === tenant);
    for (const k of siblings) this.dispatch(k);
    for (const k of siblings) for (const r of this.#groups.get(k) ?? []) r.wake();
  }
}

/** A pulled message not yet pushed: its namespace is at its cap. */
interface Held {
  readonly msg: Msg;
  readonly delivery: Delivery;
  /**
   * Its place in the namespace's order: when it became visible, or for a redelivery (a retry, an
   * ended lease) when it was pulled, so that a failing group's retries, which keep their publish
   * time, do not go before every other group's messages.
   */
  readonly order: number;
  /**
   * While held, its lease (JetStream's `ack_wait`, running from the pull) is renewed (`+WPI`) every
   * half lease, and once more at its push, so that it lasts what the push's handle says.
   */
  renew: NodeJS.Timeout | null;
  /** The group's epoch when pulled: after a seek its delivery belongs to no current consumer. */
  readonly epoch: number;
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
 * One pushed group on this gateway: its consumer's cap and lease, and a feed sized to free push
 * slots (within its namespace's share).
 */
class GroupRunner {
  readonly #d: PushFeedsDeps;
  readonly #group: GroupAddress;
  readonly names: GroupNames;
  #settings: PushedSettings;
  #handle: FeedHandle | null = null;
  #cap: number | null = null;
  /** The consumer's `ack_wait` as last seen or set. */
  #ackWaitMs: number | null = null;
  /** Pushes holding a slot (not yet answered, nor acknowledged through this gateway). */
  #inFlight = 0;
  /** Pushes whose request has not ended (acknowledged or not): what `drained()` waits for. */
  #pushing = 0;
  /** The slot of each push holding one, by stream sequence: freed once, by whichever comes first. */
  readonly #slots = new Map<number, () => void>();
  /** Pulled, waiting for a slot of the namespace (oldest first, as the stream gave them). */
  readonly #held: Held[] = [];
  #closed = false;
  /** The lease and cap last noted in the topology for receives that make the consumer. */
  #noted: PushedConsumer | null = null;
  readonly #idle: (() => void)[] = [];
  readonly #lookAgain: () => void;
  readonly #shares: NamespaceShares;
  readonly namespaceKey: string;

  constructor(
    d: PushFeedsDeps,
    group: GroupAddress,
    settings: PushedSettings,
    shares: NamespaceShares,
    lookAgain: () => void,
  ) {
    this.#d = d;
    this.#shares = shares;
    this.namespaceKey = group.namespace.key;
    this.#lookAgain = lookAgain;
    this.#group = group;
    this.names = groupNames(d.region, group);
    this.#settings = settings;
  }

  /** Opens the feed once the topic exists, and keeps the consumer's cap and lease as configured. */
  async ensure(settings: PushedSettings): Promise<void> {
    if (this.#closed) return;
    this.#settings = settings;
    const pushed = {
      ackWaitMs: pushLeaseMs(settings.push),
      maxAckPending: settings.push.maxConcurrency,
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
        demand: () =>
          this.#closed
            ? 0
            : this.#shares.demand(
                this.namespaceKey,
                this.#settings.push.maxConcurrency - this.#inFlight - this.#held.length,
                this.#held.length,
              ),
        take: (msg) => this.#take(msg),
        gone: () => this.#gone(),
      });
    } else if (
      this.#cap !== settings.push.maxConcurrency ||
      this.#ackWaitMs !== pushLeaseMs(settings.push)
    ) {
      await this.#setConfig(settings);
    }
    this.#handle.wake();
  }

  /** Slots may have freed: pull for them. */
  wake(): void {
    this.#handle?.wake();
  }

  close(): void {
    this.#closed = true;
    for (const h of this.#held.splice(0)) {
      if (h.renew) clearInterval(h.renew);
      if (this.#stale(h)) continue;
      // Another may push it now. Counted first as a holdback, so that the release does not add a
      // delivery its handler never saw (a maxDeliveries of 1 would dead-letter it unpushed).
      const seq = h.delivery.streamSeq;
      void this.#d
        .noteHoldback(this.#group, seq)
        .catch((err: unknown) =>
          this.#d.log.warn({ err, seq }, "push: holdback of a held message not counted"),
        )
        .then(() => respond(h.msg, "-NAK"));
    }
    if (this.#noted) this.#d.topology.forgetPushed(this.names, this.#noted);
    this.#handle?.close();
    this.#handle = null;
  }

  /** Resolves once no push of this group is under way. */
  drained(): Promise<void> {
    if (this.#pushing === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * `max_ack_pending` = `maxConcurrency`, and `ack_wait` = the push lease, so JetStream's own
   * lease is the push's and no push sets one. JetStream measures a `-NAK {delay}` from the
   * `ack_wait` of the moment the lease ends, so changing `ack_wait` would move every lease out
   * (a handler's extension, a retry's wait) by the difference: it is changed only while none is
   * out, tried again at every look until then (pushes meanwhile set their lease themselves).
   */
  async #setConfig(settings: PushedSettings): Promise<void> {
    const cap = settings.push.maxConcurrency;
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
  }

  #take(msg: Msg): void {
    const d = toDelivery(msg);
    if (!d) {
      msg.respond("+TERM"); // not a queue message: take it out of the way
      return;
    }
    const order = d.deliveryCount > 1 ? Date.now() : d.message.visibleAtMs;
    const epoch = this.#d.groupEpoch(this.names);
    const held: Held = { msg, delivery: d, order, renew: null, epoch };
    this.#held.push(held);
    this.#shares.dispatch(this.namespaceKey);
    if (this.#held.includes(held)) {
      // Still held: the namespace is at its cap. The shorter of the lease last seen and the one
      // the settings ask for: another gateway may have shortened it since this one looked.
      const leaseMs = Math.min(this.#ackWaitMs ?? Infinity, pushLeaseMs(this.#settings.push));
      held.renew = setInterval(
        () => {
          if (this.#stale(held)) this.#drop(held);
          else respond(msg, "+WPI");
        },
        Math.max(500, leaseMs / 2),
      );
      held.renew.unref();
    }
  }

  /** Pulled before a seek (or the group's removal) moved its epoch: not to be pushed or renewed. */
  #stale(h: Held): boolean {
    return this.#d.groupEpoch(this.names) !== h.epoch;
  }

  /** Forgets a stale held message: its delivery is of a consumer that no longer exists. */
  #drop(h: Held): void {
    if (h.renew) clearInterval(h.renew);
    const at = this.#held.indexOf(h);
    if (at >= 0) this.#held.splice(at, 1);
  }

  /** The order of the oldest message this group holds (see `Held.order`); null: none held. */
  heldOrder(): number | null {
    return this.#held[0]?.order ?? null;
  }

  /** Pushes the oldest held message (its namespace has a free slot). */
  pushHeld(): void {
    const h = this.#held.shift();
    if (!h) return;
    if (this.#stale(h)) {
      this.#drop(h); // the caller's loop goes on to the next oldest
      return;
    }
    const d = h.delivery;
    if (h.renew) {
      clearInterval(h.renew);
      respond(h.msg, "+WPI"); // its lease ran from the pull (or the last renewal)
    }
    this.#inFlight++;
    this.#pushing++;
    this.#shares.started(this.namespaceKey);
    const seq = d.streamSeq;
    let holding = true;
    const free = () => {
      if (!holding) return;
      holding = false;
      if (this.#slots.get(seq) === free) this.#slots.delete(seq);
      this.#inFlight--;
      this.#shares.ended(this.namespaceKey);
      this.#handle?.wake();
    };
    this.#slots.set(seq, free);
    if (this.#held.length === 0) this.#handle?.wake(); // one ahead again
    void this.#d.push(this.#group, d, this.#settings).finally(() => {
      free();
      this.#pushing--;
      if (this.#pushing === 0) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  /**
   * Its message `streamSeq` was acknowledged (see `PushFeeds.settled`): a push of it frees its
   * slot now. JetStream will not deliver an acknowledged message again, and a push that fails
   * after it is not retried (its release finds nothing pending), so nothing is pushed twice.
   */
  settled(streamSeq: number): void {
    // At most `maxConcurrency` pushes stay open past their acknowledgement: an endpoint that
    // acknowledges and never answers then holds its slots again, as before, rather than taking
    // a new request (and socket) per acknowledgement until its push timeout.
    if (this.#pushing - this.#inFlight >= this.#settings.push.maxConcurrency) return;
    this.#slots.get(streamSeq)?.();
  }

  /** The consumer (or its topic) went away: open again at the next look, if still wanted. */
  #gone(): void {
    // Their consumer is gone, and their leases with it.
    for (const h of this.#held.splice(0)) if (h.renew) clearInterval(h.renew);
    this.#d.topology.forgetConsumer(this.names);
    this.#handle?.close();
    this.#handle = null;
    this.#lookAgain();
  }
}

function runnerKey(g: GroupAddress): string {
  return JSON.stringify([g.namespace.key, g.topic, g.group]);
}

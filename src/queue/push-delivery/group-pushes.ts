// One pushed group's pushes on this gateway: what its feed brought and holds (waiting for a slot
// of its namespace, or of its flow-control key), what it pushes, which slots its pushes hold and
// when they free. The namespace's order and shares are the PushScheduler's (push-scheduler.ts);
// pulling is the feed's (push-feed.ts); a key's slots are FlowGate's (src/queue/flow-control/).
//
// Per-key limits (`flowControl`: concurrency, rate, ordered, decided by FlowGate's rules, as for a
// polled group): a held message whose key has no room stays held,
// leased and renewed like one held at the namespace's cap, never released toward another delivery
// (JetStream would count one, walking a key's backlog to `maxDeliveries`). The next message pushed
// is the oldest of a key not known to be full (under `ordered`, that key's lowest sequence held),
// so one key's backlog never holds another key's messages back. A key waiting for its rate is
// tried again when its room comes. A full key is tried again when a push of the group here ends (its slot given
// back by its acknowledgement or release first) and every FULL_KEY_RETRY_MS (a slot freed through
// another gateway, or by an ended lease). At most MAX_HELD_PER_GROUP are held per group, and one
// whose key stayed full for MAX_HOLD_MS (or half the lease) goes back as an uncounted holdback.
import type { Logger } from "../../logger.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import { HELD_RETRY_MS, MAX_HELD_PER_GROUP, MAX_HOLD_MS } from "../flow-control/flow-gate.js";
import { flowKeyHash } from "../flow-control/flow-keys.js";
import { keyRulesOf } from "../flow-control/key-rules.js";
import type { PushLedger } from "../ledgers/push-ledger.js";
import type { GroupAddress } from "../namespace.js";
import type { PulledPush, PushFeedHooks } from "./push-feed.js";
import { pushLeaseMs } from "./push-lease.js";
import type { PushedSettings } from "./pusher.js";

/** What a group's pushes share with the other groups of its namespace (PushScheduler). */
export interface NamespaceSlots {
  /** What a group may pull now, given what it could on its own and how many it holds. */
  demand(ns: string, own: number, held: number): number;
  /** Pushes held messages, oldest first across the namespace's groups, while slots are free. */
  dispatch(ns: string): void;
  started(ns: string): void;
  ended(ns: string): void;
  leave(g: GroupPushes): void;
  /** Payload bytes held for a full key, all groups of this gateway: false when over the bound. */
  holdBytes(bytes: number): boolean;
  unholdBytes(bytes: number): void;
}

/** The flow-control calls a push makes (FlowGate's, shared with the receive path). */
export type PushFlow = Pick<FlowGate, "takePushSlot" | "leaseMoved">;

/** A key found full is tried again this often (a slot freed through another gateway). */
export const FULL_KEY_RETRY_MS = 250;
/** A push's key slot outlasts its lease by this much (taken before the lease is renewed). */
const SLOT_MARGIN_MS = 1000;

export interface GroupPushesDeps {
  readonly group: GroupAddress;
  readonly slots: NamespaceSlots;
  readonly feed: PushFeedHooks;
  /** Pushes one delivery; resolves once it is settled or released. */
  readonly push: (
    group: GroupAddress,
    d: PulledPush["delivery"],
    s: PushedSettings,
  ) => Promise<void>;
  readonly ledger: Pick<PushLedger, "holdBack">;
  /** Per-key slots (null: no flow control on this gateway, as in some tests). */
  readonly flow: PushFlow | null;
  readonly now: () => number;
  readonly log: Pick<Logger, "warn">;
}

/** A pulled message not yet pushed: its namespace is at its cap. */
interface Held {
  readonly pulled: PulledPush;
  /**
   * Its place in the namespace's order: when it became visible, or for a redelivery (a retry, an
   * ended lease) when it was pulled, so that a failing group's retries, which keep their publish
   * time, do not go before every other group's messages.
   */
  readonly order: number;
  /**
   * While held, its lease (running from the pull) is renewed every half lease, and once more at
   * its push, so that it lasts what the push's handle says.
   */
  renew: NodeJS.Timeout | null;
  /** The group's epoch when pulled: after a seek its delivery belongs to no current cursor. */
  readonly epoch: number;
  /** The hash of its flow-control key (null: not limited per key). */
  readonly keyHash: string | null;
  /** Counted in the gateway's bytes held for full keys. */
  bytesHeld: boolean;
  /** Once its key was found full: when it is given back if no slot freed (the service's clock). */
  untilMs: number | null;
}

export class GroupPushes {
  readonly #d: GroupPushesDeps;
  readonly namespaceKey: string;
  #settings: PushedSettings;
  /** The group's lease as the store last said (null: not known yet). */
  #leaseMs: number | null = null;
  /** Pushes holding a slot (not yet answered, nor acknowledged through this gateway). */
  #inFlight = 0;
  /** Pushes whose request has not ended (acknowledged or not): what `drained()` waits for. */
  #pushing = 0;
  /** The slot of each push holding one, by stream sequence: freed once, by whichever comes first. */
  readonly #slots = new Map<number, () => void>();
  /** Pulled, waiting for a slot of the namespace (oldest first, as the feed gave them). */
  readonly #held: Held[] = [];
  #closed = false;
  readonly #idle: (() => void)[] = [];
  /** Keys found without a free slot, and keys a slot is being taken for: skipped by `nextOrder`. */
  readonly #fullKeys = new Set<string>();
  readonly #takingKeys = new Set<string>();
  /** While keys are full: tries them again, and gives back what was held too long. */
  #retry: NodeJS.Timeout | null = null;
  /** Keys waiting for their rate: a try when each one's room comes. */
  readonly #rateWakes = new Map<string, NodeJS.Timeout>();

  constructor(deps: GroupPushesDeps, settings: PushedSettings) {
    this.#d = deps;
    this.namespaceKey = deps.group.namespace.key;
    this.#settings = settings;
  }

  get group(): GroupAddress {
    return this.#d.group;
  }

  /** The settings its next pushes follow. */
  update(settings: PushedSettings): void {
    this.#settings = settings;
  }

  /** The group's lease as its consumer has it now (a held message is renewed within it). */
  noteLease(ms: number): void {
    this.#leaseMs = ms;
  }

  /** Slots may have freed: the feed pulls for them. */
  wakeFeed(): void {
    this.#d.feed.wake();
  }

  /** How many more deliveries the feed should pull for this group now. */
  demand(): number {
    if (this.#closed) return 0;
    const max = this.#settings.push.maxConcurrency;
    let own = max - this.#inFlight - this.#held.length;
    if (this.#keyed()) {
      // Held for a full key, a message takes none of the group's pushes: room for other keys,
      // up to MAX_HELD_PER_GROUP held (the consumer's max_ack_pending leaves that much more,
      // push-cap.ts).
      const waiting = this.#held.filter((h) => this.#isFull(h.keyHash)).length;
      own = Math.min(own + waiting, MAX_HELD_PER_GROUP - this.#held.length);
    }
    return this.#d.slots.demand(this.namespaceKey, own, this.#held.length);
  }

  /** A delivery the feed brought: pushed now if its namespace has a slot, else held. */
  take(pulled: PulledPush): void {
    const d = pulled.delivery;
    const order = d.deliveryCount > 1 ? this.#d.now() : d.message.visibleAtMs;
    const flow = this.#keyed() ? this.#settings.flowControl : null;
    const keyHash = flow ? flowKeyHash(d.message, flow) : null;
    const held: Held = {
      pulled,
      order,
      renew: null,
      epoch: this.#d.feed.epoch(),
      keyHash,
      bytesHeld: false,
      untilMs: null,
    };
    if (keyHash !== null) {
      // Bounded as the receive path's waitlist is (FlowGate): more go back at once, uncounted.
      const bytes = d.message.payload.length;
      if (this.#held.length >= MAX_HELD_PER_GROUP || !this.#d.slots.holdBytes(bytes)) {
        this.#giveBack(held, HELD_RETRY_MS);
        return;
      }
      held.bytesHeld = true;
    }
    this.#held.push(held);
    this.#d.slots.dispatch(this.namespaceKey);
    // Still held: the namespace is at its cap, or its key has no free slot (then it takes none
    // of the group's pushes, and the feed may pull for another key).
    if (this.#held.includes(held)) {
      this.#keepLeased(held);
      if (this.#isFull(keyHash)) this.#d.feed.wake();
    }
  }

  /**
   * The order of the message this group would push next (see `Held.order`); null: none. It is
   * the oldest held of no key or of a key not known full ("nextOrder skips full keys"), while
   * the group has a push to spare.
   */
  nextOrder(): number | null {
    return this.#next()?.order ?? null;
  }

  /**
   * Pushes the message `nextOrder` named (its namespace has a free slot). One of a limited key
   * first takes a slot of its key (FlowGate), the namespace's slot counted meanwhile; with none
   * free it is held again, in its place, and its key skipped until a slot may have freed.
   */
  pushNext(): void {
    const h = this.#next();
    if (!h) return;
    this.#held.splice(this.#held.indexOf(h), 1);
    if (this.#stale(h)) {
      this.#drop(h); // the caller's loop goes on to the next oldest
      return;
    }
    const flow = this.#d.flow;
    if (h.keyHash === null || flow === null) return this.#push(h);
    const key = h.keyHash;
    this.#inFlight++;
    this.#d.slots.started(this.namespaceKey);
    this.#takingKeys.add(key);
    const leaseMs = Math.max(this.#leaseMs ?? 0, pushLeaseMs(this.#settings.push));
    const deadlineMs = this.#d.now() + leaseMs + SLOT_MARGIN_MS;
    const d = h.pulled.delivery;
    void flow
      .takePushSlot(this.#d.group, key, d, deadlineMs)
      .catch((err: unknown) => {
        this.#d.log.warn(
          { err, seq: d.streamSeq },
          "push: a key's slot was not taken; tried again",
        );
        return { taken: false, roomAtMs: null };
      })
      .then(({ taken, roomAtMs }) => {
        this.#takingKeys.delete(key);
        this.#inFlight--;
        if (this.#closed || this.#stale(h)) {
          if (taken) void flow.leaseMoved(this.#d.group, d.streamSeq, 0);
          if (this.#closed && !this.#stale(h)) this.#giveBack(h);
          else this.#drop(h);
          this.#d.slots.ended(this.namespaceKey);
          return;
        }
        if (taken) {
          this.#push(h, true); // the namespace's slot it counted is its push's
          this.#d.slots.dispatch(this.namespaceKey); // the next held, of its key or another
          return;
        }
        this.#fullKeys.add(key);
        if (roomAtMs !== null) this.#wakeAt(key, roomAtMs);
        h.untilMs ??= this.#d.now() + Math.min(MAX_HOLD_MS, this.#leaseOf() / 2);
        this.#holdAgain(h);
        this.#retrySoon();
        this.#d.slots.ended(this.namespaceKey); // the next oldest of another key takes the slot
        this.#d.feed.wake(); // held for its key, it leaves room to pull
      });
  }

  /** Pushes `h` now; `counted`: its namespace's slot was counted for it (while taking its key's). */
  #push(h: Held, counted = false): void {
    if (h.bytesHeld) {
      h.bytesHeld = false;
      this.#d.slots.unholdBytes(h.pulled.delivery.message.payload.length);
    }
    const d = h.pulled.delivery;
    if (h.renew) {
      clearInterval(h.renew);
      h.renew = null;
      h.pulled.renew(); // its lease ran from the pull (or the last renewal)
    }
    this.#inFlight++;
    this.#pushing++;
    if (!counted) this.#d.slots.started(this.namespaceKey);
    const seq = d.streamSeq;
    let holding = true;
    const free = () => {
      if (!holding) return;
      holding = false;
      if (this.#slots.get(seq) === free) this.#slots.delete(seq);
      this.#inFlight--;
      this.#d.slots.ended(this.namespaceKey);
      this.#d.feed.wake();
    };
    this.#slots.set(seq, free);
    if (this.#held.length === 0) this.#d.feed.wake(); // one ahead again
    void this.#d.push(this.#d.group, d, this.#settings).finally(() => {
      // Settled (its key's slot given back by its acknowledgement or release) or timed out (the
      // slot kept to its lease's end): its key may have room, and is tried again.
      const unblocked = h.keyHash !== null && this.#fullKeys.delete(h.keyHash);
      free();
      if (unblocked) this.#d.slots.dispatch(this.namespaceKey);
      this.#pushing--;
      if (this.#pushing === 0) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  /**
   * Its message `streamSeq` was acknowledged through this gateway, the store confirming it: a
   * push of it frees its slot now. An acknowledged message is not delivered again, and a push
   * that fails after it is not retried (its release finds nothing pending): nothing is pushed
   * twice. A push's handler acknowledges before it answers (`@vercel/queue` does), so the next
   * message goes out while the endpoint finishes its answer.
   */
  settled(streamSeq: number): void {
    // At most `maxConcurrency` pushes stay open past their acknowledgement: an endpoint that
    // acknowledges and never answers then holds its slots again, as before, rather than taking
    // a new request (and socket) per acknowledgement until its push timeout.
    if (this.#pushing - this.#inFlight >= this.#settings.push.maxConcurrency) return;
    this.#slots.get(streamSeq)?.();
  }

  /**
   * No longer pushed here: what it holds is given back, counted first as a holdback, so that the
   * release does not add a delivery its handler never saw (a maxDeliveries of 1 would
   * dead-letter it unpushed). Pushes under way finish (`drained`).
   */
  close(): void {
    this.#closed = true;
    this.#stopRetry();
    this.#d.slots.leave(this);
    for (const h of this.#held.splice(0)) {
      if (this.#stale(h)) this.#drop(h);
      else this.#giveBack(h);
    }
  }

  /** The group's cursor (or its topic) went away: what it holds was leased by nobody now. */
  gone(): void {
    for (const h of this.#held.splice(0)) this.#drop(h);
  }

  /** The hashes of the keys its held messages wait for (found without a free slot). */
  waitingKeys(): string[] {
    return this.#held.filter((h) => h.untilMs !== null).map((h) => h.keyHash!);
  }

  /** Resolves once no push of this group is under way. */
  drained(): Promise<void> {
    if (this.#pushing === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Pulled before a seek (or the group's removal) moved its epoch: not to be pushed or renewed. */
  #stale(h: Held): boolean {
    return this.#d.feed.epoch() !== h.epoch;
  }

  /** Forgets a held message (stale, gone, given back): no renewal, no bytes counted. */
  #drop(h: Held): void {
    if (h.renew) clearInterval(h.renew);
    h.renew = null;
    if (h.bytesHeld) {
      h.bytesHeld = false;
      this.#d.slots.unholdBytes(h.pulled.delivery.message.payload.length);
    }
    const at = this.#held.indexOf(h);
    if (at >= 0) this.#held.splice(at, 1);
  }

  /**
   * Given back unpushed, counted first as a holdback, so that the release does not add a delivery
   * its handler never saw (a maxDeliveries of 1 would dead-letter it unpushed).
   */
  #giveBack(h: Held, delayMs = 0): void {
    this.#drop(h);
    const seq = h.pulled.delivery.streamSeq;
    void this.#d.ledger
      .holdBack(this.#d.group, seq)
      .catch((err: unknown) =>
        this.#d.log.warn({ err, seq }, "push: holdback of a held message not counted"),
      )
      .then(() => h.pulled.release(delayMs));
  }

  /**
   * The oldest held message that may be pushed now: of no key, or of one not known full, while
   * the group has a push to spare.
   */
  #next(): Held | null {
    // The group's own cap (`maxConcurrency`) on this gateway: a message held for its key may
    // have been pulled beyond it.
    if (this.#inFlight >= this.#settings.push.maxConcurrency) return null;
    const h = this.#held.find((o) => !this.#isFull(o.keyHash));
    if (!h || h.keyHash === null || this.#settings.flowControl?.ordered !== true) return h ?? null;
    // Ordered: the key's lowest stream sequence held here first (a redelivered head, placed by
    // its pull, may sit behind later messages of its key that wait for it).
    let head = h;
    for (const o of this.#held) {
      if (o.keyHash === h.keyHash && o.pulled.delivery.streamSeq < head.pulled.delivery.streamSeq) {
        head = o;
      }
    }
    return head;
  }

  #isFull(keyHash: string | null): boolean {
    return keyHash !== null && (this.#fullKeys.has(keyHash) || this.#takingKeys.has(keyHash));
  }

  /** Whether the group limits messages per key (`flowControl` concurrency, rate or ordered). */
  #keyed(): boolean {
    return this.#d.flow !== null && keyRulesOf(this.#settings.flowControl) !== null;
  }

  /**
   * A key waits for its rate: it is tried again when its room comes (on the service's clock),
   * not only at the next FULL_KEY_RETRY_MS.
   */
  #wakeAt(key: string, atMs: number): void {
    const prev = this.#rateWakes.get(key);
    if (prev) clearTimeout(prev);
    const t = setTimeout(
      () => {
        if (this.#rateWakes.get(key) === t) this.#rateWakes.delete(key);
        if (this.#closed || !this.#fullKeys.delete(key)) return;
        this.#d.slots.dispatch(this.namespaceKey);
      },
      Math.max(0, atMs - this.#d.now()),
    );
    t.unref();
    this.#rateWakes.set(key, t);
  }

  /**
   * The shorter of the lease last seen and the one the settings ask for: another gateway may have
   * shortened it since this one looked.
   */
  #leaseOf(): number {
    return Math.min(this.#leaseMs ?? Infinity, pushLeaseMs(this.#settings.push));
  }

  /** While held, its lease is renewed every half lease (at least every 500 ms). */
  #keepLeased(h: Held): void {
    if (h.renew) return;
    h.renew = setInterval(
      () => {
        if (this.#stale(h)) this.#drop(h);
        else h.pulled.renew();
      },
      Math.max(500, this.#leaseOf() / 2),
    );
    h.renew.unref();
  }

  /** Held again after its key had no free slot: back in its place (by order), still leased. */
  #holdAgain(h: Held): void {
    const at = this.#held.findIndex((o) => o.order > h.order);
    this.#held.splice(at < 0 ? this.#held.length : at, 0, h);
    this.#keepLeased(h);
  }

  /**
   * While keys are full, every FULL_KEY_RETRY_MS: what waited past its time goes back (an
   * uncounted holdback), and the full keys are tried again.
   */
  #retrySoon(): void {
    if (this.#retry || this.#closed) return;
    this.#retry = setInterval(() => {
      const now = this.#d.now();
      for (const h of this.#held.filter((o) => o.untilMs !== null && o.untilMs <= now)) {
        if (this.#stale(h)) this.#drop(h);
        else this.#giveBack(h, HELD_RETRY_MS); // the feed pulls past it meanwhile
      }
      this.#fullKeys.clear();
      if (!this.#held.some((o) => o.untilMs !== null)) this.#stopRetry(); // none waits for a key
      this.#d.slots.dispatch(this.namespaceKey);
      this.#d.feed.wake(); // what was given back made room to pull
    }, FULL_KEY_RETRY_MS);
    this.#retry.unref();
  }

  #stopRetry(): void {
    if (this.#retry) clearInterval(this.#retry);
    this.#retry = null;
    for (const t of this.#rateWakes.values()) clearTimeout(t);
    this.#rateWakes.clear();
  }
}

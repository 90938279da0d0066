// One pushed group's pushes on this gateway: what its feed brought and holds (waiting for a slot
// of its namespace), what it pushes, which slots its pushes hold and when they free. The
// namespace's order and shares are the PushScheduler's (push-scheduler.ts); pulling is the
// feed's (push-feed.ts).
import type { Logger } from "../../logger.js";
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
}

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
    const own = this.#settings.push.maxConcurrency - this.#inFlight - this.#held.length;
    return this.#d.slots.demand(this.namespaceKey, own, this.#held.length);
  }

  /** A delivery the feed brought: pushed now if its namespace has a slot, else held. */
  take(pulled: PulledPush): void {
    const d = pulled.delivery;
    const order = d.deliveryCount > 1 ? this.#d.now() : d.message.visibleAtMs;
    const held: Held = { pulled, order, renew: null, epoch: this.#d.feed.epoch() };
    this.#held.push(held);
    this.#d.slots.dispatch(this.namespaceKey);
    if (this.#held.includes(held)) {
      // Still held: the namespace is at its cap. The shorter of the lease last seen and the one
      // the settings ask for: another gateway may have shortened it since this one looked.
      const leaseMs = Math.min(this.#leaseMs ?? Infinity, pushLeaseMs(this.#settings.push));
      held.renew = setInterval(
        () => {
          if (this.#stale(held)) this.#drop(held);
          else pulled.renew();
        },
        Math.max(500, leaseMs / 2),
      );
      held.renew.unref();
    }
  }

  /**
   * The order of the message this group would push next (see `Held.order`); null: none. It is
   * the oldest held; a limit within the group (per key) would choose here, and in `pushNext`.
   */
  nextOrder(): number | null {
    return this.#held[0]?.order ?? null;
  }

  /** Pushes the message `nextOrder` named (its namespace has a free slot). */
  pushNext(): void {
    const h = this.#held.shift();
    if (!h) return;
    if (this.#stale(h)) {
      this.#drop(h); // the caller's loop goes on to the next oldest
      return;
    }
    const d = h.pulled.delivery;
    if (h.renew) {
      clearInterval(h.renew);
      h.pulled.renew(); // its lease ran from the pull (or the last renewal)
    }
    this.#inFlight++;
    this.#pushing++;
    this.#d.slots.started(this.namespaceKey);
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
      free();
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
    this.#d.slots.leave(this);
    for (const h of this.#held.splice(0)) {
      if (h.renew) clearInterval(h.renew);
      if (this.#stale(h)) continue;
      const seq = h.pulled.delivery.streamSeq;
      void this.#d.ledger
        .holdBack(this.#d.group, seq)
        .catch((err: unknown) =>
          this.#d.log.warn({ err, seq }, "push: holdback of a held message not counted"),
        )
        .then(() => h.pulled.release());
    }
  }

  /** The group's cursor (or its topic) went away: what it holds was leased by nobody now. */
  gone(): void {
    for (const h of this.#held.splice(0)) if (h.renew) clearInterval(h.renew);
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

  /** Forgets a stale held message: its delivery is of a cursor that no longer exists. */
  #drop(h: Held): void {
    if (h.renew) clearInterval(h.renew);
    const at = this.#held.indexOf(h);
    if (at >= 0) this.#held.splice(at, 1);
  }
}

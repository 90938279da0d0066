// Long polling: receives that wait (Vqs-Wait-Seconds) for a message. On each gateway the waiting
// receives of one group share one feed (a waiting pull on the group's consumer, sized to the
// number of waiters), so ten thousand waiters over a hundred groups cost a hundred pulls, not ten
// thousand. A delivery goes to the group's longest waiter; one that arrives when nobody waits any
// more (a waiter timed out or hung up a moment ago) is kept briefly for the next waiter (clients
// poll again at once), then released. See docs/architecture.md, "Long polling".
import type { Delivery, DeliveryTaker, Feed, GroupCursor } from "./broker.js";
import type { GroupAddress, TopicAddress } from "./namespace.js";

/** A delivery nobody waits for is kept this long for the next waiter before it is released. */
const SPARE_MS = 500;
/** A group's feed is closed once nobody has waited on it for this long. */
const IDLE_MS = 5000;
/** While a topic does not exist, waiters look again this often. */
const MISSING_RETRY_MS = 1000;

interface Waiter {
  readonly resolve: (d: Delivery | null) => void;
}

export class LongPolls {
  readonly #broker: GroupCursor;
  readonly #now: () => number;
  readonly #groups = new Map<string, GroupWaiters>();
  /** Groups whose topic did not exist when their waiters came, by topic: a publish wakes them. */
  readonly #missing = new Map<string, Set<GroupWaiters>>();
  #closed = false;

  /** `now` is the service's clock, the one `untilMs` is on. */
  constructor(broker: GroupCursor, now: () => number) {
    this.#broker = broker;
    this.#now = now;
  }

  /** Waiting receives on this gateway now (for metrics and tests). */
  get waiting(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += g.waiters.length;
    return n;
  }

  /**
   * Resolves with a delivery of the group as soon as one comes, or null at `untilMs` (the
   * service's clock), when `signal` aborts (the client hung up), or when the gateway shuts down.
   */
  wait(group: GroupAddress, untilMs: number, signal: AbortSignal | null): Promise<Delivery | null> {
    if (this.#closed || signal?.aborted) return Promise.resolve(null);
    const key = JSON.stringify([group.namespace.key, group.topic, group.group]);
    let g = this.#groups.get(key);
    if (!g) {
      const topic = topicKey(group);
      g = new GroupWaiters(this.#broker, group, {
        now: this.#now,
        forget: () => this.#groups.delete(key),
        missing: (w, on) => {
          const set = this.#missing.get(topic) ?? new Set<GroupWaiters>();
          if (on) set.add(w);
          else set.delete(w);
          if (set.size > 0) this.#missing.set(topic, set);
          else this.#missing.delete(topic);
        },
      });
      this.#groups.set(key, g);
    }
    return g.wait(untilMs, signal);
  }

  /**
   * Whether this gateway follows the group for waiting receives (its feed is open, or closes in a
   * few seconds): a waiting receive then needs no pull of its own before it waits.
   */
  following(group: GroupAddress): boolean {
    const key = JSON.stringify([group.namespace.key, group.topic, group.group]);
    return this.#groups.get(key)?.following ?? false;
  }

  /**
   * A message was published to `topic` through this gateway: its groups' waiters that found no
   * topic look again now rather than at their next retry (up to a second later), so a receive
   * that waits for a topic a publish creates gets its first message at once.
   */
  published(topic: TopicAddress): void {
    if (this.#missing.size === 0) return; // the usual case: no key to build on a publish
    const waiting = this.#missing.get(topicKey(topic));
    if (waiting) for (const g of [...waiting]) g.lookAgain();
  }

  /** A delivery kept for the next waiter (its waiter left a moment ago), for any receive. */
  takeSpare(group: GroupAddress): Delivery | null {
    const key = JSON.stringify([group.namespace.key, group.topic, group.group]);
    return this.#groups.get(key)?.takeSpare() ?? null;
  }

  /** Every waiting receive answers at once (with nothing): the gateway is shutting down. */
  close(): void {
    this.#closed = true;
    for (const g of [...this.#groups.values()]) g.close();
    this.#groups.clear();
  }
}

function topicKey(topic: TopicAddress): string {
  return JSON.stringify([topic.namespace.key, topic.topic]);
}

interface GroupHooks {
  /** The service's clock. */
  readonly now: () => number;
  /** The group is idle: its entry goes. */
  readonly forget: () => void;
  /** Whether the group waits for its topic to exist (`lookAgain()` is then worth calling). */
  readonly missing: (g: GroupWaiters, on: boolean) => void;
}

class GroupWaiters implements DeliveryTaker {
  readonly #broker: GroupCursor;
  readonly #group: GroupAddress;
  readonly #hooks: GroupHooks;
  readonly waiters: Waiter[] = [];
  readonly #spare: { d: Delivery; timer: NodeJS.Timeout }[] = [];
  #feed: Feed | null = null;
  #opening = false;
  #idle: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  /** A publish came while the feed was being opened: a "no such topic" answer is looked at again. */
  #recheck = false;

  constructor(broker: GroupCursor, group: GroupAddress, hooks: GroupHooks) {
    this.#broker = broker;
    this.#group = group;
    this.#hooks = hooks;
  }

  wait(untilMs: number, signal: AbortSignal | null): Promise<Delivery | null> {
    const spare = this.#spare.shift();
    if (spare) {
      clearTimeout(spare.timer);
      return Promise.resolve(spare.d);
    }
    if (this.#idle) clearTimeout(this.#idle);
    this.#idle = null;
    return new Promise<Delivery | null>((resolve) => {
      const done = (d: Delivery | null) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        resolve(d);
      };
      const waiter: Waiter = { resolve: done };
      const leave = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        if (this.waiters.length === 0) this.#idleSoon();
        done(null);
      };
      const timer = setTimeout(leave, Math.max(0, untilMs - this.#hooks.now()));
      const abort = () => leave();
      signal?.addEventListener("abort", abort, { once: true });
      this.waiters.push(waiter);
      this.#feedOn();
    });
  }

  get following(): boolean {
    return this.#feed !== null || this.#opening;
  }

  demand(): number {
    return this.waiters.length;
  }

  takeSpare(): Delivery | null {
    const spare = this.#spare.shift();
    if (!spare) return null;
    clearTimeout(spare.timer);
    return spare.d;
  }

  take(d: Delivery): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      if (this.waiters.length === 0) this.#idleSoon();
      waiter.resolve(d);
      return;
    }
    const timer = setTimeout(() => {
      const i = this.#spare.findIndex((s) => s.d === d);
      if (i >= 0) this.#spare.splice(i, 1);
      void this.#broker.setLease(this.#group, d, 0).catch(() => undefined);
    }, SPARE_MS);
    this.#spare.push({ d, timer });
  }

  gone(): void {
    this.#feed?.close();
    this.#feed = null;
    this.#feedOn();
  }

  /** The topic may exist now: look at once instead of at the next retry. */
  lookAgain(): void {
    if (this.#opening) {
      this.#recheck = true; // the look under way may have come before the publish
      return;
    }
    if (!this.#retry) return;
    clearTimeout(this.#retry);
    this.#retry = null;
    this.#hooks.missing(this, false);
    this.#feedOn();
  }

  close(): void {
    if (this.#idle) clearTimeout(this.#idle);
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    this.#hooks.missing(this, false);
    this.#feed?.close();
    this.#feed = null;
    for (const w of this.waiters.splice(0)) w.resolve(null);
    for (const s of this.#spare.splice(0)) {
      clearTimeout(s.timer);
      void this.#broker.setLease(this.#group, s.d, 0).catch(() => undefined);
    }
  }

  /** Makes sure a feed is open (or being opened) while anyone waits, and asks it to pull. */
  #feedOn(): void {
    if (this.waiters.length === 0) return;
    if (this.#feed) {
      this.#feed.wake();
      return;
    }
    if (this.#opening || this.#retry) return;
    this.#opening = true;
    this.#recheck = false;
    this.#hooks.missing(this, true);
    this.#broker.openFeed(this.#group, this).then(
      (feed) => {
        this.#opening = false;
        if (feed && this.waiters.length === 0 && this.#spare.length === 0) {
          this.#hooks.missing(this, false);
          feed.close(); // everyone left meanwhile
          return;
        }
        this.#feed = feed;
        if (feed) {
          this.#hooks.missing(this, false);
          feed.wake();
        } else this.#retryLater(); // no such topic (yet): a publish may create it
      },
      () => {
        this.#opening = false;
        this.#retryLater();
      },
    );
  }

  /** Looks again in a while (at once when a publish came meanwhile); the group stays "missing". */
  #retryLater(): void {
    const ms = this.#recheck ? 0 : MISSING_RETRY_MS;
    this.#recheck = false;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#hooks.missing(this, false);
      this.#feedOn();
    }, ms);
  }

  /** Once nobody has waited for a while, the feed closes and the group is forgotten. */
  #idleSoon(): void {
    if (this.#idle) clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      if (this.waiters.length > 0) return;
      this.close();
      this.#hooks.forget();
    }, IDLE_MS);
    this.#idle.unref();
  }
}

// Waiting pulls on many consumers through one inbox subscription. The pusher and long polling
// keep a pull open on each consumer they serve, sized to what they can take now (several takers
// of one consumer share its pulls: a pushed group can be long-polled too); the messages
// arrive on one wildcard subscription and are told apart by their ack subject, which names the
// stream and consumer. JetStream serves a consumer's waiting pulls in order, one message at a
// time to the oldest, so each message is counted against the oldest open pull of its consumer;
// status replies (408 expired, 404/409 ended, 100 heartbeat, 503 gone, 409 "Consumer Deleted"
// gone) carry the pull's own inbox token. A pull that goes silent (its server restarted, its consumer moved) is dropped
// after two missed heartbeats and replaced. See docs/architecture.md, "Push delivery".
import { createInbox, nanos, type Msg, type NatsConnection } from "@nats-io/transport-node";

/** What a feed needs from whoever takes its messages. */
export interface FeedTaker {
  /** How many more messages this gateway can take from the consumer now. */
  demand(): number;
  /** A pulled message: leased to this gateway until acknowledged, released or its lease ends. */
  take(msg: Msg): void;
  /** The consumer (or its stream) is gone: pulls stop until `wake()`. */
  gone(): void;
}

export interface FeedHandle {
  /** Demand may have grown: pull for it. */
  wake(): void;
  /** Stops pulling; messages of pulls still open are released as they arrive. */
  close(): void;
}

export interface ConsumerFeedOptions {
  /** How long one waiting pull lasts at the server. */
  readonly expiresMs: number;
  /** The server's idle heartbeat on a waiting pull: silence twice as long drops the pull. */
  readonly heartbeatMs: number;
}

interface Pull {
  readonly id: string;
  remaining: number;
  lastHeardMs: number;
}

interface Feed {
  readonly key: string;
  readonly subject: string;
  readonly takers: FeedTaker[];
  readonly pulls: Pull[];
  /** A pull for the demand is due in this turn's check phase (wakes of one turn coalesce). */
  due: boolean;
}

/**
 * Pulls open at once on one consumer: a second covers demand that grew while the first waits;
 * beyond that, demand waits for one of them to end (used up, expired), when a pull for the whole
 * demand replaces it. So however many receives wait, a consumer has at most two pulls.
 */
const MAX_OPEN_PULLS = 2;

export class ConsumerFeed {
  readonly #nc: NatsConnection;
  readonly #o: ConsumerFeedOptions;
  readonly #prefix = createInbox();
  /** Feeds by `<stream> <consumer>`. */
  readonly #feeds = new Map<string, Feed>();
  /** Open pulls by their inbox token. */
  readonly #pulls = new Map<string, Feed>();
  #next = 0;
  readonly #watchdog: NodeJS.Timeout;

  constructor(nc: NatsConnection, options: ConsumerFeedOptions) {
    this.#nc = nc;
    this.#o = options;
    nc.subscribe(`${this.#prefix}.*`, { callback: (_err, msg) => this.#onMessage(msg) });
    this.#watchdog = setInterval(() => this.#dropSilent(), options.heartbeatMs);
    this.#watchdog.unref();
  }

  open(stream: string, consumer: string, taker: FeedTaker): FeedHandle {
    const key = `${stream} ${consumer}`;
    let feed = this.#feeds.get(key);
    if (!feed) {
      feed = {
        key,
        subject: `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
        takers: [],
        pulls: [],
        due: false,
      };
      this.#feeds.set(key, feed);
    }
    feed.takers.push(taker);
    const f = feed;
    return {
      wake: () => this.#pullSoon(f),
      close: () => {
        const i = f.takers.indexOf(taker);
        if (i >= 0) f.takers.splice(i, 1);
        if (f.takers.length === 0 && this.#feeds.get(key) === f) this.#feeds.delete(key);
      },
    };
  }

  /** Stops everything: messages of open pulls are released as they arrive. */
  close(): void {
    clearInterval(this.#watchdog);
    for (const feed of this.#feeds.values()) feed.takers.length = 0;
    this.#feeds.clear();
  }

  #pullSoon(feed: Feed): void {
    if (feed.due) return;
    feed.due = true;
    setImmediate(() => {
      feed.due = false;
      this.#pull(feed);
    });
  }

  /** Opens a pull for whatever demand is not covered by the pulls already open. */
  #pull(feed: Feed): void {
    if (feed.takers.length === 0 || this.#nc.isClosed()) return;
    if (feed.pulls.length >= MAX_OPEN_PULLS) return;
    const open = feed.pulls.reduce((n, p) => n + p.remaining, 0);
    const want = feed.takers.reduce((n, t) => n + Math.max(0, t.demand()), 0) - open;
    if (want <= 0) return;
    const id = String(++this.#next);
    const pull: Pull = { id, remaining: want, lastHeardMs: Date.now() };
    feed.pulls.push(pull);
    this.#pulls.set(id, feed);
    this.#nc.publish(
      feed.subject,
      JSON.stringify({
        batch: want,
        expires: nanos(this.#o.expiresMs),
        idle_heartbeat: nanos(this.#o.heartbeatMs),
      }),
      { reply: `${this.#prefix}.${id}` },
    );
  }

  #onMessage(msg: Msg): void {
    if (msg.reply?.startsWith("$JS.ACK.")) {
      const feed = this.#feeds.get(consumerKey(msg.reply));
      const head = feed?.pulls[0];
      if (head && --head.remaining <= 0) {
        this.#end(feed, head);
        this.#pullSoon(feed); // used up: one for the whole demand now
      }
      // The first taker that wants one gets it; the first taker at all if none does now.
      const taker = feed?.takers.find((t) => t.demand() > 0) ?? feed?.takers[0];
      if (!taker) {
        msg.respond("-NAK"); // nobody takes it any more: release it at once
        return;
      }
      taker.take(msg);
      return;
    }
    const id = msg.subject.slice(this.#prefix.length + 1);
    const feed = this.#pulls.get(id);
    const pull = feed?.pulls.find((p) => p.id === id);
    if (!feed || !pull) return;
    const code = msg.headers?.code ?? 0;
    if (code === 100) {
      pull.lastHeardMs = Date.now();
      return;
    }
    this.#end(feed, pull);
    if (code === 503 || (code === 409 && msg.headers?.description === "Consumer Deleted")) {
      // Nobody serves the consumer: it (or its stream) is gone. A deleted one may be made again
      // at once (a seek): the takers look at it before pulling, as a pull sent in that moment
      // reaches the old consumer on nats-server 2.9, which drops it without an answer.
      for (const t of [...feed.takers]) t.gone();
      return;
    }
    this.#pull(feed); // expired (408) or ended (404/409): pull again for what is wanted
  }

  #end(feed: Feed, pull: Pull): void {
    const i = feed.pulls.indexOf(pull);
    if (i >= 0) feed.pulls.splice(i, 1);
    this.#pulls.delete(pull.id);
  }

  /** Pulls whose server went silent are dropped and replaced. */
  #dropSilent(): void {
    const limit = Date.now() - 2 * this.#o.heartbeatMs - 1000;
    for (const feed of this.#feeds.values()) {
      const silent = feed.pulls.filter((p) => p.lastHeardMs < limit);
      if (silent.length === 0) continue;
      for (const p of silent) this.#end(feed, p);
      this.#pull(feed);
    }
  }
}

/**
 * `<stream> <consumer>` of an ack subject, v1 (`$JS.ACK.<stream>.<consumer>...`, 9 tokens) or
 * v2 (`$JS.ACK.<domain>.<account hash>.<stream>.<consumer>...`, 11 or more). Read by the dots'
 * positions rather than split into a dozen strings: it runs once per pulled message.
 */
function consumerKey(ackSubject: string): string {
  const dots: number[] = [];
  for (let i = ackSubject.indexOf("."); i >= 0; i = ackSubject.indexOf(".", i + 1)) dots.push(i);
  // Tokens t[k] lie between dots[k - 1] and dots[k]; there are dots.length + 1 of them.
  const token = (k: number) => ackSubject.slice(dots[k - 1]! + 1, dots[k]);
  return dots.length + 1 >= 11 ? `${token(4)} ${token(5)}` : `${token(2)} ${token(3)}`;
}

// Following a KV bucket for as long as the gateway runs: every entry, those stored before the
// watch and those to come, is handed to `apply`. A watch that fails or ends is replaced (backing
// off); after a reconnect a new watch replays the bucket, since the old one may have missed
// changes or lost its server-side consumer. The bucket is opened again for each watch: a NATS
// server that lost its data has no bucket until it is made again. Settings, group epochs and
// cut leases are kept in memory this way, so that reading them costs no round trip.
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection, QueuedIterator } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";

/** A replay of the whole bucket into the follower's memory, which may be abandoned midway. */
export interface Replay {
  finish(): void;
  cancel(): void;
}

export interface FollowedBucketOptions {
  /** Opens the bucket, creating it if it is missing. */
  readonly open: () => Promise<KV>;
  /** What the bucket holds, for logs ("consumer settings"). */
  readonly what: string;
  readonly log: Logger;
  /** Each entry, replayed ones first. */
  readonly apply: (e: KvWatchEntry) => void;
  /** Called as each watch starts replaying the bucket (for memory rebuilt from a replay). */
  readonly beginReplay?: () => Replay;
  /** Leave deletions out (memory that only ever grows). */
  readonly ignoreDeletes?: boolean;
  /** How long `start` waits for the first replay before serving anyway. */
  readonly syncTimeoutMs?: number;
}

const SYNC_TIMEOUT_MS = 5000;
/** Waits between attempts to follow the bucket again after a failure. */
const RETRY_MS = [250, 500, 1000, 2000, 5000];

export class FollowedBucket {
  readonly #nc: NatsConnection;
  readonly #o: FollowedBucketOptions;
  #kv: KV | null = null;
  #watch: QueuedIterator<KvWatchEntry> | null = null;
  #stopped = false;
  /** The current watch was stopped to start a new one (after a reconnect), not because it failed. */
  #restarting = false;
  #synced!: () => void;
  readonly #firstSync = new Promise<void>((resolve) => (this.#synced = resolve));
  /** Ends the wait before the next attempt to follow the bucket. */
  #wake: (() => void) | null = null;

  constructor(nc: NatsConnection, o: FollowedBucketOptions) {
    this.#nc = nc;
    this.#o = o;
  }

  /** The bucket as last opened (null before `start`). */
  get kv(): KV | null {
    return this.#kv;
  }

  /** Opens the bucket (failing if it cannot) and follows it; resolves once it is read. */
  async start(): Promise<void> {
    this.#kv = await this.#o.open();
    void this.#follow();
    this.#restartOnReconnect().catch((err: unknown) =>
      this.#o.log.warn({ err }, `stopped watching the NATS connection for ${this.#o.what}`),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), this.#o.syncTimeoutMs ?? SYNC_TIMEOUT_MS);
    });
    if (await Promise.race([this.#firstSync.then(() => false), late])) {
      this.#o.log.warn(`${this.#o.what} not read in time; serving anyway`);
    }
    clearTimeout(timer);
  }

  /** Stops following the bucket (at once, even while waiting to try again). */
  stop(): void {
    this.#stopped = true;
    this.#watch?.stop();
    this.#wake?.();
  }

  async #follow(): Promise<void> {
    for (let failures = 0; !this.#stopped;) {
      try {
        await this.#followOnce();
        failures = 0;
      } catch (err) {
        if (this.#stopped) break;
        this.#o.log.warn({ err }, `following ${this.#o.what} failed; trying again`);
        const wait = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]!;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = null;
      }
    }
  }

  /** One watch: replays the bucket, then applies changes until it ends. */
  async #followOnce(): Promise<void> {
    const replay = this.#o.beginReplay?.();
    let watch: QueuedIterator<KvWatchEntry> | null = null;
    this.#restarting = false;
    try {
      const kv = await this.#o.open();
      this.#kv = kv;
      watch = await kv.watch(this.#o.ignoreDeletes ? { ignoreDeletes: true } : {});
      this.#watch = watch;
      if (this.#stopped) watch.stop();
      const state = (await kv.status()).streamInfo.state;
      let replaying = true;
      const replayed = () => {
        replaying = false;
        replay?.finish();
        this.#synced();
      };
      if (state.messages === 0) replayed();
      for await (const e of watch) {
        this.#o.apply(e);
        if (replaying && (e.delta === 0 || e.revision >= state.last_seq)) replayed();
      }
      if (!this.#stopped && !this.#restarting) throw new Error(`the ${this.#o.what} watch ended`);
    } finally {
      replay?.cancel();
      watch?.stop();
      this.#watch = null;
    }
  }

  async #restartOnReconnect(): Promise<void> {
    for await (const s of this.#nc.status()) {
      if (this.#stopped) break;
      if (s.type === "reconnect") {
        this.#restarting = true;
        this.#watch?.stop();
      }
    }
  }
}

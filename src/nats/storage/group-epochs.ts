// Group epochs: a group's consumer recreated by a seek (or the group deleted) starts a new epoch,
// and receipt handles are signed for their group's epoch, so every handle handed out before is
// recognised as stale (409) wherever it is presented, while its ack subject, rebuilt from the
// handle, would otherwise act on the new consumer's delivery of the same sequence. Every gateway
// follows the epochs through a KV bucket it watches and keeps in memory (one entry per group
// ever reset; absent means epoch 0), so checking a handle costs no round trip.
import type { JetStreamClient } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Logger } from "../../logger.js";
import type { GroupNames } from "../core/naming.js";

export const EPOCHS_BUCKET = "VQS_GROUP_EPOCHS";

export interface GroupEpochsOptions {
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly log: Logger;
}

/** How long a starting gateway waits for the epochs before serving anyway. */
const SYNC_TIMEOUT_MS = 5000;

export class GroupEpochs {
  readonly #js: JetStreamClient;
  readonly #o: GroupEpochsOptions;
  readonly #epochs = new Map<string, number>();
  #kv: KV | null = null;
  #stopWatch: (() => void) | null = null;

  constructor(js: JetStreamClient, o: GroupEpochsOptions) {
    this.#js = js;
    this.#o = o;
  }

  /** Opens the bucket and starts following it; resolves once the existing epochs are read. */
  async start(): Promise<void> {
    const kv = await new Kvm(this.#js).create(EPOCHS_BUCKET, {
      history: 1,
      replicas: this.#o.replicas,
      storage: StorageType.File,
      timeout: this.#o.timeoutMs,
      allow_direct: false,
    });
    this.#kv = kv;
    const watch = await kv.watch({ ignoreDeletes: true });
    this.#stopWatch = () => watch.stop();
    const initial = (await kv.status()).values;
    let synced!: () => void;
    const ready = new Promise<void>((resolve) => (synced = resolve));
    if (initial === 0) synced();
    void (async () => {
      for await (const e of watch) {
        const epoch = Number(e.string());
        if (Number.isSafeInteger(epoch)) this.#learn(e.key, epoch);
        if (e.delta === 0) synced();
      }
    })().catch((err: unknown) => this.#o.log.warn({ err }, "stopped following group epochs"));
    const timer = setTimeout(() => {
      this.#o.log.warn("group epochs not read in time; serving anyway");
      synced();
    }, SYNC_TIMEOUT_MS);
    await ready;
    clearTimeout(timer);
  }

  stop(): void {
    this.#stopWatch?.();
  }

  /** The group's current epoch (0 until it was first reset). */
  epoch(g: GroupNames): number {
    return this.#epochs.get(key(g)) ?? 0;
  }

  /** Starts the group's next epoch (compare-and-set, so racing resets each count). */
  async advance(g: GroupNames): Promise<number> {
    if (!this.#kv) throw new Error("group epochs used before start()");
    const k = key(g);
    for (;;) {
      const e = await this.#kv.get(k);
      const current = e && e.operation === "PUT" ? Number(e.string()) || 0 : 0;
      const next = current + 1;
      try {
        if (e && e.operation === "PUT") await this.#kv.update(k, String(next), e.revision);
        else await this.#kv.create(k, String(next));
        this.#learn(k, next);
        return next;
      } catch (err) {
        if (!/wrong last sequence|key exists/i.test(String(err))) throw err;
      }
    }
  }

  #learn(k: string, epoch: number): void {
    if (epoch > (this.#epochs.get(k) ?? 0)) this.#epochs.set(k, epoch);
  }
}

function key(g: GroupNames): string {
  return `${g.stream}.${g.consumer}`;
}

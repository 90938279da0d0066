// Group epochs: a group's consumer recreated by a seek (or the group deleted) starts a new epoch,
// and receipt handles are signed for their group's epoch, so every handle handed out before is
// recognised as stale (409) wherever it is presented, while its ack subject, rebuilt from the
// handle, would otherwise act on the new consumer's delivery of the same sequence. Every gateway
// follows the epochs through a KV bucket it watches and keeps in memory (one entry per group
// ever reset; absent means epoch 0), so checking a handle costs no round trip.
import type { JetStreamClient } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../../logger.js";
import { FollowedBucket } from "../../core/followed-bucket.js";
import type { GroupNames } from "../../core/naming.js";

export const EPOCHS_BUCKET = "VQS_GROUP_EPOCHS";

export interface GroupEpochsOptions {
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly log: Logger;
}

export class GroupEpochs {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #o: GroupEpochsOptions;
  readonly #epochs = new Map<string, number>();
  #kv: KV | null = null;
  #followed: FollowedBucket | null = null;

  constructor(nc: NatsConnection, js: JetStreamClient, o: GroupEpochsOptions) {
    this.#nc = nc;
    this.#js = js;
    this.#o = o;
  }

  /** Opens the bucket and starts following it; resolves once the existing records are read. */
  start(): Promise<void> {
    this.#followed = new FollowedBucket(this.#nc, {
      what: "group epochs",
      log: this.#o.log,
      ignoreDeletes: true,
      open: async () =>
        (this.#kv = await new Kvm(this.#js).create(EPOCHS_BUCKET, {
          history: 1,
          replicas: this.#o.replicas,
          storage: StorageType.File,
          timeout: this.#o.timeoutMs,
          allow_direct: false,
        })),
      apply: (e) => {
        const epoch = Number(e.string());
        if (Number.isSafeInteger(epoch)) this.#learn(e.key, epoch);
      },
    });
    return this.#followed.start();
  }

  stop(): void {
    this.#followed?.stop();
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

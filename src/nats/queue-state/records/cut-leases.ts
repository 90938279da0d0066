// Leases cut short through their own handle: released, or set to end before the deadline the
// handle carries. Such a message can be delivered again while its old handle still looks
// current, so that handle must be checked for staleness like one past its deadline. Every
// gateway learns of every cut through a KV bucket it watches and keeps in memory until the
// handle's own deadline, so acknowledging within a lease stays free of round trips. Records
// live in their own bucket for the longest lease, so a gateway that starts reads at most an
// hour of them. This is the CutLeaseLog port (src/queue/broker.ts) on JetStream.
import type { JetStreamClient } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../../logger.js";
import type { CutLeaseLog, LeaseRef } from "../../../queue/broker.js";
import type { GroupAddress } from "../../../queue/namespace.js";
import { FollowedBucket } from "../../core/followed-bucket.js";
import { groupNames } from "../../core/naming.js";
import { storeOp, type ObserveOperation } from "../../core/store-op.js";

export const CUTS_BUCKET = "VQS_CUT_LEASES";

export interface CutLeasesOptions {
  readonly replicas: number;
  /** The longest lease a handle can carry (records are kept this long, plus a margin). */
  readonly maxLeaseMs: number;
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly region: string;
  readonly observe: ObserveOperation;
}

const MARGIN_MS = 60_000;

export class CutLeases implements CutLeaseLog {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #o: CutLeasesOptions;
  /** key -> until when (ms) the handle it names could still be presented as current. */
  readonly #cut = new Map<string, number>();
  #kv: KV | null = null;
  #followed: FollowedBucket | null = null;

  constructor(nc: NatsConnection, js: JetStreamClient, o: CutLeasesOptions) {
    this.#nc = nc;
    this.#js = js;
    this.#o = o;
  }

  /** Opens the bucket and starts following it; resolves once the existing records are read. */
  start(): Promise<void> {
    this.#followed = new FollowedBucket(this.#nc, {
      what: "cut leases",
      log: this.#o.log,
      ignoreDeletes: true,
      open: async () =>
        (this.#kv = await new Kvm(this.#js).create(CUTS_BUCKET, {
          history: 1,
          replicas: this.#o.replicas,
          ttl: this.#o.maxLeaseMs + MARGIN_MS,
          storage: StorageType.File,
          timeout: this.#o.timeoutMs,
        })),
      apply: (e) => {
        const until = Number(e.string());
        if (Number.isFinite(until)) this.#remember(e.key, until);
      },
    });
    return this.#followed.start();
  }

  stop(): void {
    this.#followed?.stop();
  }

  /** Records (for every gateway) that the lease's delivery was cut short. */
  markCut(group: GroupAddress, lease: LeaseRef, untilMs: number): Promise<void> {
    return storeOp(this.#o.observe, "lease_cut", async () => {
      const k = this.#key(group, lease);
      this.#remember(k, untilMs);
      if (!this.#kv) throw new Error("cut leases used before start()");
      await this.#kv.put(k, String(untilMs));
    });
  }

  /** Whether the lease's delivery was cut short (its handle must be checked). */
  wasCut(group: GroupAddress, lease: LeaseRef): boolean {
    const k = this.#key(group, lease);
    const until = this.#cut.get(k);
    if (until === undefined) return false;
    if (until + MARGIN_MS < Date.now()) {
      this.#cut.delete(k);
      return false;
    }
    return true;
  }

  #key(group: GroupAddress, lease: LeaseRef): string {
    const g = groupNames(this.#o.region, group);
    return `${g.stream}.${g.consumer}.${lease.streamSeq}.${lease.deliveryCount}`;
  }

  #remember(k: string, untilMs: number): void {
    if (untilMs + MARGIN_MS < Date.now()) return;
    this.#cut.set(k, untilMs);
    // Forget what can no longer matter (bounded by cuts within the longest lease).
    if (this.#cut.size % 4096 === 0) {
      const now = Date.now();
      for (const [key, until] of this.#cut) if (until + MARGIN_MS < now) this.#cut.delete(key);
    }
  }
}

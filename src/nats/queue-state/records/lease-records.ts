// The region's VQS_LEASES KV bucket: where the records port (jetstream-records.ts) keeps what
// the ledgers of src/queue/ledgers/ write (current deliveries, ID leases, holdbacks, counts), and
// where push health is merged. Keys are "<stream>.<consumer>[.<seq>].<name>", all hex, digits and
// fixed names, so no user text reaches a key.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { PushHealth } from "../../../queue/management/queue-admin.js";
import type { GroupNames } from "../../core/naming.js";
import { Once } from "../../core/once.js";

export const LEASES_BUCKET = "VQS_LEASES";

export interface LeaseRecordsOptions {
  readonly replicas: number;
  /** Records outlive any message they describe (longest TTL plus the longest lease). */
  readonly ttlMs: number;
  readonly timeoutMs: number;
  /** The bucket's name (LEASES_BUCKET unless a test keeps records apart). */
  readonly name?: string;
}

export class LeaseRecords {
  readonly #js: JetStreamClient;
  readonly #opts: LeaseRecordsOptions;
  readonly #kv = new Once<KV>();

  constructor(js: JetStreamClient, opts: LeaseRecordsOptions) {
    this.#js = js;
    this.#opts = opts;
  }

  /** The bucket (created on first use); also where the server clock is sampled. */
  bucket(): Promise<KV> {
    return this.#kv.get(() =>
      new Kvm(this.#js).create(this.#opts.name ?? LEASES_BUCKET, {
        history: 1,
        replicas: this.#opts.replicas,
        ttl: this.#opts.ttlMs,
        storage: StorageType.File,
        timeout: this.#opts.timeoutMs,
        // Every read here decides (is a handle stale, is a message leased by ID, does the group
        // use receive by ID): gets go to the stream leader, never to a replica that may lag.
        allow_direct: false,
      }),
    );
  }

  /**
   * Removes every record whose key is under `prefix` (`<stream>.>`: a removed topic's,
   * `<stream>.<consumer>.>`: a removed group's), in one purge. A topic or group made again under
   * its name starts at sequence 1, where an old record (an acknowledgement or lease by ID, a
   * delivery count) would act on a new message.
   */
  async forget(jsm: JetStreamManager, prefix: string): Promise<void> {
    await this.bucket();
    const name = this.#opts.name ?? LEASES_BUCKET;
    await jsm.streams.purge(`KV_${name}`, { filter: `$KV.${name}.${prefix}` });
  }

  // --- per group: messages dead-lettered (LeaseLedger writes it), push health ---

  async deadLettered(g: GroupNames): Promise<number> {
    const e = await (await this.bucket()).get(`${g.stream}.${g.consumer}.dl`);
    return e && e.operation === "PUT" ? Number(e.string()) || 0 : 0;
  }

  /** Merges a gateway's view of the group's push health into the stored one (latest wins). */
  async mergePushHealth(g: GroupNames, health: PushHealth): Promise<void> {
    const kv = await this.bucket();
    const k = `${g.stream}.${g.consumer}.ph`;
    const stored = await this.pushHealth(g);
    const latest = (a: number | null, b: number | null) =>
      a === null ? b : b === null ? a : Math.max(a, b);
    const failedLater = (health.lastFailureAtMs ?? 0) >= (stored?.lastFailureAtMs ?? 0);
    const merged: PushHealth = {
      lastSuccessAtMs: latest(health.lastSuccessAtMs, stored?.lastSuccessAtMs ?? null),
      lastFailureAtMs: latest(health.lastFailureAtMs, stored?.lastFailureAtMs ?? null),
      lastFailure: failedLater ? health.lastFailure : (stored?.lastFailure ?? null),
    };
    await kv.put(k, JSON.stringify(merged));
  }

  async pushHealth(g: GroupNames): Promise<PushHealth | null> {
    const e = await (await this.bucket()).get(`${g.stream}.${g.consumer}.ph`);
    if (!e || e.operation !== "PUT") return null;
    const v = JSON.parse(e.string()) as Partial<PushHealth>;
    return {
      lastSuccessAtMs: typeof v.lastSuccessAtMs === "number" ? v.lastSuccessAtMs : null,
      lastFailureAtMs: typeof v.lastFailureAtMs === "number" ? v.lastFailureAtMs : null,
      lastFailure: typeof v.lastFailure === "string" ? v.lastFailure : null,
    };
  }
}

export function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: number; message?: string; cause?: unknown } | null;
  return (
    e?.code === 10071 ||
    /wrong last sequence|key exists/i.test(e?.message ?? "") ||
    (e?.cause !== undefined && isWrongLastSequence(e.cause))
  );
}

// The gateway's own lease state, for what a JetStream consumer cannot say: which delivery of a
// message is current (so stale receipt handles are refused), and leases taken by message ID
// (a durable consumer cannot deliver one chosen sequence). One KV bucket per region; keys are
// "<stream>.<consumer>.<seq>.<kind>", all hex and digits, so no user text reaches a key.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { CursorLease, IdLease } from "../../queue/broker.js";
import type { PushHealth } from "../../queue/management/queue-admin.js";
import type { GroupNames } from "../core/naming.js";
import { Once } from "../core/once.js";

export const LEASES_BUCKET = "VQS_LEASES";

/** Per-message counts: push hold-backs, handler leases, deliveries bounced at the limit. */
type CountKind = "b" | "h" | "c";

export interface LeaseRecordsOptions {
  readonly replicas: number;
  /** Records outlive any message they describe (longest TTL plus the longest lease). */
  readonly ttlMs: number;
  readonly timeoutMs: number;
}

/** How long a gateway trusts its cached "this group never used receive by ID". */
export const ID_FLAG_CACHE_MS = 1000;
const MAX_FLAGS = 100_000;

export class LeaseRecords {
  readonly #js: JetStreamClient;
  readonly #opts: LeaseRecordsOptions;
  readonly #kv = new Once<KV>();
  readonly #flags = new Map<string, { on: boolean; untilMs: number }>();

  constructor(js: JetStreamClient, opts: LeaseRecordsOptions) {
    this.#js = js;
    this.#opts = opts;
  }

  /** The bucket (created on first use); also where the server clock is sampled. */
  bucket(): Promise<KV> {
    return this.#kv.get(() =>
      new Kvm(this.#js).create(LEASES_BUCKET, {
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
    await jsm.streams.purge(`KV_${LEASES_BUCKET}`, { filter: `$KV.${LEASES_BUCKET}.${prefix}` });
    const flags = prefix.slice(0, -1); // `<stream>.` or `<stream>.<consumer>.`
    for (const k of this.#flags.keys()) if (`${k}.`.startsWith(flags)) this.#flags.delete(k);
  }

  // --- current delivery (stale handle detection) ---

  /** Records that delivery number `count` of `seq` is the current one (written on redelivery). */
  async recordDelivery(g: GroupNames, seq: number, count: number): Promise<void> {
    await (await this.bucket()).put(key(g, seq, "d"), String(count));
  }

  /** The current delivery number of `seq` when it was ever redelivered, else null. */
  async currentDelivery(g: GroupNames, seq: number): Promise<number | null> {
    const e = await (await this.bucket()).get(key(g, seq, "d"));
    return e && e.operation === "PUT" ? Number(e.string()) : null;
  }

  // --- pushed groups: held-back deliveries, leases set by the handler ---

  async putCount(g: GroupNames, seq: number, kind: CountKind, n: number): Promise<void> {
    await (await this.bucket()).put(key(g, seq, kind), String(n));
  }

  async getCount(g: GroupNames, seq: number, kind: CountKind): Promise<number | null> {
    const e = await (await this.bucket()).get(key(g, seq, kind));
    return e && e.operation === "PUT" ? Number(e.string()) : null;
  }

  // --- per group: messages dead-lettered, push health (the management API reads them) ---

  /** One more message of the group moved to its dead-letter topic (compare-and-set). */
  async countDeadLettered(g: GroupNames): Promise<void> {
    const kv = await this.bucket();
    const k = `${g.stream}.${g.consumer}.dl`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const e = await kv.get(k);
      const n = e && e.operation === "PUT" ? Number(e.string()) || 0 : 0;
      try {
        if (e && e.operation === "PUT") await kv.update(k, String(n + 1), e.revision);
        else await kv.create(k, "1");
        return;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
    }
  }

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

  // --- leases the group's cursor handed out (kept only for groups that use receive by ID) ---

  async putCursorLease(g: GroupNames, seq: number, lease: CursorLease): Promise<void> {
    await (await this.bucket()).put(key(g, seq, "c"), JSON.stringify(lease));
  }

  async getCursorLease(g: GroupNames, seq: number): Promise<CursorLease | null> {
    const e = await (await this.bucket()).get(key(g, seq, "c"));
    if (!e || e.operation !== "PUT") return null;
    const v = JSON.parse(e.string()) as Partial<CursorLease> | number;
    // A bare number is a bounce at the concurrency limit (putCount "c"): that delivery was
    // released unseen, so the cursor handed the message out at most once less, and not now.
    if (typeof v === "number") return { count: Math.max(0, v - 1), deadlineMs: 0, acked: false };
    return { count: v.count ?? 0, deadlineMs: v.deadlineMs ?? 0, acked: v.acked === true };
  }

  // --- leases taken by message ID ---

  async getIdLease(g: GroupNames, seq: number): Promise<IdLease | null> {
    const e = await (await this.bucket()).get(key(g, seq, "i"));
    if (!e || e.operation !== "PUT") return null;
    const v = JSON.parse(e.string()) as Partial<IdLease>;
    return {
      state: v.state ?? "released",
      deadlineMs: v.deadlineMs ?? 0,
      count: v.count ?? 0,
      bounces: v.bounces ?? 0,
      leaseId: v.leaseId ?? 0,
      revision: e.revision,
    };
  }

  /** Compare-and-set: the new revision, or null when someone else changed the lease first. */
  async putIdLease(
    g: GroupNames,
    seq: number,
    lease: Omit<IdLease, "revision">,
    expectedRevision: number | null,
  ): Promise<number | null> {
    const kv = await this.bucket();
    const value = JSON.stringify({
      state: lease.state,
      deadlineMs: lease.deadlineMs,
      count: lease.count,
      bounces: lease.bounces,
      leaseId: lease.leaseId,
    });
    try {
      return expectedRevision === null
        ? await kv.create(key(g, seq, "i"), value)
        : await kv.update(key(g, seq, "i"), value, expectedRevision);
    } catch (err) {
      if (isWrongLastSequence(err)) return null;
      throw err;
    }
  }

  /** What usesIdLeases would answer from its cache, without a call; undefined when unknown. */
  knownUsesIdLeases(g: GroupNames): boolean | undefined {
    const cached = this.#flags.get(`${g.stream}.${g.consumer}`);
    return cached && (cached.on || cached.untilMs > Date.now()) ? cached.on : undefined;
  }

  /** Whether the group ever used receive by ID (cached for ID_FLAG_CACHE_MS). */
  async usesIdLeases(g: GroupNames): Promise<boolean> {
    const known = this.knownUsesIdLeases(g);
    if (known !== undefined) return known;
    const k = `${g.stream}.${g.consumer}`;
    const e = await (await this.bucket()).get(`${k}.byid`);
    const on = e !== null && e.operation === "PUT";
    if (this.#flags.size >= MAX_FLAGS) this.#flags.clear(); // bounded: one entry per group seen
    this.#flags.set(k, { on, untilMs: Date.now() + ID_FLAG_CACHE_MS });
    return on;
  }

  /**
   * Marks the group as using receive by ID. When this call (re)creates the mark, other gateways
   * may still hold a cached "no" for up to ID_FLAG_CACHE_MS, so it waits that out (once per
   * group). The mark is refreshed daily so the bucket's TTL never drops it while in use.
   */
  async markIdLeases(g: GroupNames): Promise<void> {
    const k = `${g.stream}.${g.consumer}`;
    const kv = await this.bucket();
    const e = await kv.get(`${k}.byid`);
    this.#flags.set(k, { on: true, untilMs: Number.MAX_SAFE_INTEGER });
    if (e && e.operation === "PUT") {
      if (Date.now() - e.created.getTime() > FLAG_REFRESH_MS) await kv.put(`${k}.byid`, "1");
      return;
    }
    await kv.put(`${k}.byid`, "1");
    await new Promise((r) => setTimeout(r, ID_FLAG_CACHE_MS + 500));
  }
}

const FLAG_REFRESH_MS = 24 * 3600 * 1000;

function key(g: GroupNames, seq: number, kind: "d" | "i" | "c" | "b" | "h"): string {
  return `${g.stream}.${g.consumer}.${seq}.${kind}`;
}

export function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: number; message?: string; cause?: unknown } | null;
  return (
    e?.code === 10071 ||
    /wrong last sequence|key exists/i.test(e?.message ?? "") ||
    (e?.cause !== undefined && isWrongLastSequence(e.cause))
  );
}

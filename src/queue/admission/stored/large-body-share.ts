// The share of the large-body store one namespace may hold (VQS_LARGE_BODY_NAMESPACE_PERCENT of
// VQS_LARGE_BODY_STORE_BYTES), held for the tenant too: all its deployments together may hold no
// more than one namespace could, so inventing deployment IDs gains no room (403
// large_body_share_exceeded). An upload is refused before a byte is read when its declared length
// has no room, and as soon as what it brought has none.
//
// The namespace's bodies are read from the store for each upload (as it begins). The tenant's are
// the sum over its live deployments (tenant-admission.ts), a read reused for
// TENANT_BYTES_REFRESH_MS with this gateway's uploads added as they write; a refusal is decided
// on a fresh read. Uploads racing through other gateways can overshoot by what they write within
// that time.
import { AppError } from "../../../errors.js";
import { TENANT_BYTES_REFRESH_MS } from "./tenant-admission.js";
import { tenantKeyOf } from "../tenant.js";
import type { LargeBodyUsagePort } from "../usage.js";

export interface LargeBodyShareOptions {
  /** Bytes one namespace, and one tenant, may hold; 0: no share. */
  readonly shareBytes: number;
  readonly usage: LargeBodyUsagePort;
  /** Namespace keys of the tenant's live deployments (of a namespace key of the tenant). */
  readonly deployments: (namespaceKey: string) => Promise<ReadonlySet<string>>;
  readonly now: () => number;
}

/** One upload's place in the shares: counts what it writes, refusing past either share. */
export interface ShareHold {
  /** Counts `n` bytes more of the body; throws large_body_share_exceeded past a share. */
  add(n: number): void;
  /** The upload ended: its bytes stay counted if they were stored. */
  end(stored: boolean): void;
}

/** Tenants whose large-body usage is remembered (the least recently read forgotten first). */
const MAX_TENANTS = 10_000;

interface Upload {
  written: number;
  /** What of `written` the tenant's last read already found in the store. */
  counted: number;
  /** `written` when the read under way began. */
  atRead: number;
}

interface TenantBytes {
  /** Bytes the last read found, plus stored uploads' bytes it did not. */
  bytes: number;
  at: number;
  readonly uploads: Set<Upload>;
  reading: Promise<void> | null;
}

const NO_HOLD: ShareHold = { add: () => undefined, end: () => undefined };

export class LargeBodyShare {
  readonly #o: LargeBodyShareOptions;
  readonly #tenants = new Map<string, TenantBytes>();

  constructor(o: LargeBodyShareOptions) {
    this.#o = o;
  }

  /** Takes an upload of a body declared `declaredLength` long (0: unknown) into the shares. */
  async open(namespaceKey: string, declaredLength: number): Promise<ShareHold> {
    const share = this.#o.shareBytes;
    if (share === 0) return NO_HOLD;
    const tenant = tenantKeyOf(namespaceKey);
    const [used, t] = await Promise.all([
      this.#o.usage.largeBodyBytes(namespaceKey),
      this.#tenantBytes(tenant, namespaceKey),
    ]);
    if (used + declaredLength > share) throw namespaceRefusal();
    if (tenantUsed(t) + declaredLength > share) {
      await this.#read(t, namespaceKey); // decided on a fresh read
      if (tenantUsed(t) + declaredLength > share) throw tenantRefusal(share);
    }
    const up: Upload = { written: 0, counted: 0, atRead: 0 };
    t.uploads.add(up);
    return {
      add: (n) => {
        up.written += n;
        if (used + up.written > share) throw namespaceRefusal();
        if (tenantUsed(t) > share) throw tenantRefusal(share);
      },
      end: (stored) => {
        if (!t.uploads.delete(up)) return;
        if (stored) t.bytes += up.written - up.counted;
      },
    };
  }

  async #tenantBytes(tenant: string, namespaceKey: string): Promise<TenantBytes> {
    let t = this.#tenants.get(tenant);
    if (!t) {
      t = { bytes: 0, at: -Infinity, uploads: new Set(), reading: null };
      if (this.#tenants.size >= MAX_TENANTS) {
        this.#tenants.delete(this.#tenants.keys().next().value!);
      }
      this.#tenants.set(tenant, t);
    }
    if (this.#o.now() - t.at > TENANT_BYTES_REFRESH_MS) await this.#read(t, namespaceKey);
    return t;
  }

  /** Reads the tenant's large bodies over its deployments (one read at a time per tenant). */
  #read(t: TenantBytes, namespaceKey: string): Promise<void> {
    t.reading ??= (async () => {
      const at = this.#o.now();
      // Chunks of uploads under way written before the read began are in what it finds.
      for (const up of t.uploads) up.atRead = up.written;
      try {
        const keys = new Set(await this.#o.deployments(namespaceKey));
        keys.add(namespaceKey);
        let bytes = 0;
        const each = await Promise.all([...keys].map((k) => this.#o.usage.largeBodyBytes(k)));
        for (const b of each) bytes += b;
        t.bytes = bytes;
        t.at = at;
        for (const up of t.uploads) up.counted = Math.max(up.counted, up.atRead);
      } finally {
        t.reading = null;
      }
    })();
    return t.reading;
  }
}

function tenantUsed(t: TenantBytes): number {
  let used = t.bytes;
  for (const up of t.uploads) used += up.written - up.counted;
  return used;
}

function namespaceRefusal(): AppError {
  return new AppError("large_body_share_exceeded");
}

function tenantRefusal(share: number): AppError {
  return new AppError("large_body_share_exceeded", {
    message:
      "This tenant's large message bodies, all its deployments together, already use the share of the large-body store one namespace may use; wait for messages to expire or ask the operator for a larger share.",
    extra: { limitBytes: share, scope: "tenant" },
  });
}

// The large-body share per namespace and per tenant, on an in-memory usage port and an injected
// clock: a tenant spread over many deployment IDs holds no more than one namespace's share, its
// uploads on this gateway count as they write, and a refusal is decided on a fresh read.
import { describe, expect, it } from "vitest";
import { LargeBodyShare } from "../../../src/queue/admission/stored/large-body-share.js";
import { TENANT_BYTES_REFRESH_MS } from "../../../src/queue/admission/stored/tenant-admission.js";
import { tenantKeyOf } from "../../../src/queue/admission/tenant.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { refusal, refused } from "../../helpers/refusal.js";

const ns = (deployment: string | null, project = "prj") =>
  makeNamespace("team", project, "production", deployment).key;

function setup(shareBytes: number) {
  let now = 1_000_000;
  /** Bytes of large bodies per namespace in the store. */
  const stored = new Map<string, number>();
  let reads = 0;
  const share = new LargeBodyShare({
    shareBytes,
    usage: {
      largeBodyBytes: async (key) => {
        reads++;
        await Promise.resolve();
        return stored.get(key) ?? 0;
      },
    },
    // Every namespace that holds something is a live deployment of its tenant.
    deployments: (key) =>
      Promise.resolve(
        new Set([...stored.keys()].filter((k) => tenantKeyOf(k) === tenantKeyOf(key))),
      ),
    now: () => now,
  });
  return {
    share,
    stored,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
  };
}

describe("the large-body share", () => {
  it("refuses a declared body past the namespace's share before a byte is read", async () => {
    const { share, stored } = setup(1000);
    stored.set(ns("a"), 600);
    const err = await refusal(share.open(ns("a"), 500));
    expect(err.code).toBe("large_body_share_exceeded");
    expect(err.status).toBe(403);
    expect(err.extra).toBeUndefined(); // the namespace's refusal, as before
  });

  it("holds for the tenant: deployments together hold no more than one namespace could", async () => {
    const { share, stored } = setup(1000);
    for (const d of ["a", "b", "c"]) stored.set(ns(d), 300);
    // Each deployment alone has room for 500 more; the tenant has 100.
    const err = await refusal(share.open(ns("d"), 500));
    expect(err.code).toBe("large_body_share_exceeded");
    expect(err.extra).toEqual({ limitBytes: 1000, scope: "tenant" });
    // Another tenant (another project) has its own.
    const other = await share.open(ns("a", "other"), 500);
    other.end(false);
  });

  it("counts a chunked upload as it writes, and uploads at once against each other", async () => {
    const { share } = setup(1000);
    const one = await share.open(ns("a"), 0);
    const two = await share.open(ns("b"), 0);
    one.add(400);
    two.add(400);
    // 800 of the tenant's 1000 are being written here: 300 more in either is refused.
    expect(refused(() => one.add(300)).extra).toEqual({ limitBytes: 1000, scope: "tenant" });
    two.end(false); // removed: its bytes no longer count
    one.add(100);
    one.end(true);
  });

  it("keeps a stored upload's bytes until the next read, then decides a refusal on a fresh one", async () => {
    const { share, stored, reads, advance } = setup(1000);
    const up = await share.open(ns("a"), 0);
    up.add(900);
    up.end(true);
    const before = reads();
    // Reused within the refresh time: 900 known, 200 more refused only after a fresh read...
    stored.set(ns("a"), 0); // ...which finds the body gone (expired, purged)
    const next = await share.open(ns("b"), 200);
    next.end(false);
    expect(reads()).toBeGreaterThan(before);
    advance(TENANT_BYTES_REFRESH_MS + 1);
    stored.set(ns("a"), 900);
    expect((await refusal(share.open(ns("b"), 200))).code).toBe("large_body_share_exceeded");
  });

  it("has no share at 0", async () => {
    const { share, stored, reads } = setup(0);
    stored.set(ns("a"), 10 ** 12);
    const up = await share.open(ns("a"), 10 ** 12);
    up.add(10 ** 12);
    up.end(true);
    expect(reads()).toBe(0);
  });
});

// The body-byte rate limit's buckets per tenant, on an injected clock: bytes that fit are taken,
// a body larger than a second's share is taken into an empty bucket and holds the next ones back
// until it drains, and the refusal's Retry-After is the time the excess takes to drain.
import { describe, expect, it } from "vitest";
import { TenantByteBuckets } from "../../../src/queue/admission/rates/tenant-byte-buckets.js";

describe("tenant byte buckets", () => {
  it("takes what fits, refuses the rest until it drains, tenant by tenant", () => {
    let now = 0;
    const b = new TenantByteBuckets(10, () => now);
    expect(b.take("a", 600, 1000)).toBeNull();
    const refused = b.take("a", 600, 1000);
    expect([refused?.code, refused?.status, refused?.retryAfterSeconds]).toEqual([
      "rate_limited",
      429,
      1,
    ]);
    expect(b.take("b", 600, 1000)).toBeNull(); // another tenant has its own bucket
    now += 300; // 300 drained: 300 + 600 fits now
    expect(b.take("a", 600, 1000)).toBeNull();
  });

  it("takes a body larger than a second's share into an empty bucket, then holds the tenant back", () => {
    let now = 0;
    const b = new TenantByteBuckets(10, () => now);
    expect(b.take("a", 5000, 1000)).toBeNull();
    expect(b.take("a", 1, 1000)?.retryAfterSeconds).toBe(5);
    now += 5000;
    expect(b.take("a", 1, 1000)).toBeNull();
  });

  it("forgets the least recently used tenant past its bound", () => {
    const b = new TenantByteBuckets(1, () => 0);
    expect(b.take("a", 1000, 1000)).toBeNull();
    expect(b.take("b", 1000, 1000)).toBeNull();
    expect(b.take("a", 1000, 1000)).toBeNull(); // forgotten: an empty bucket again
  });
});

import { describe, expect, it } from "vitest";
import { makeNamespace } from "../../../src/queue/namespace.js";
import {
  decodeReceiptHandle,
  encodeReceiptHandle,
  type Lease,
} from "../../../src/queue/identity/receipt-handle.js";
import { deriveSecretKeys } from "../../../src/queue/identity/secret-keys.js";

const keys = deriveSecretKeys("unit-test-secret-unit-test-secret-!!", "iad1");
const ns = makeNamespace("team", "prj", "production", null);
const group = { namespace: ns, topic: "orders", group: "billing" };
const lease: Lease = {
  kind: "group",
  streamSeq: 123456789,
  deliverySeq: 42,
  deliveryCount: 3,
  deadlineMs: 1_800_000_000_000,
};

describe("receipt handles", () => {
  it("round-trip as URL-safe text", () => {
    const h = encodeReceiptHandle(keys.receiptHandle, group, lease);
    expect(h).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(h)).toBe(h);
    expect(decodeReceiptHandle(keys.receiptHandle, group, h)).toEqual(lease);
    const byId = { ...lease, kind: "id" as const };
    expect(
      decodeReceiptHandle(
        keys.receiptHandle,
        group,
        encodeReceiptHandle(keys.receiptHandle, group, byId),
      ),
    ).toEqual(byId);
  });

  it("are refused in another topic, group, tenant or deployment", () => {
    const h = encodeReceiptHandle(keys.receiptHandle, group, lease);
    const elsewhere = [
      { ...group, topic: "orders2" },
      { ...group, group: "billing2" },
      { ...group, namespace: makeNamespace("team2", "prj", "production", null) },
      { ...group, namespace: makeNamespace("team", "prj", "production", "dpl_1") },
      { ...group, namespace: makeNamespace("team", "prj", "preview", null) },
    ];
    for (const g of elsewhere) expect(decodeReceiptHandle(keys.receiptHandle, g, h)).toBeNull();
  });

  it("of a group's earlier epoch (before a seek) are stale; of a later or far older one, foreign", () => {
    const k = keys.receiptHandle;
    const at = (epoch: number) => encodeReceiptHandle(k, group, lease, epoch);
    expect(decodeReceiptHandle(k, group, at(0), 0)).toEqual(lease);
    expect(decodeReceiptHandle(k, group, at(3), 3)).toEqual(lease);
    expect(decodeReceiptHandle(k, group, at(0), 1)).toBe("stale");
    expect(decodeReceiptHandle(k, group, at(2), 6)).toBe("stale");
    expect(decodeReceiptHandle(k, group, at(1), 6)).toBeNull();
    expect(decodeReceiptHandle(k, group, at(2), 1)).toBeNull();
    expect(decodeReceiptHandle(k, { ...group, group: "other" }, at(0), 1)).toBeNull();
  });

  it("are refused when any byte is changed, or when signed with another secret", () => {
    const h = encodeReceiptHandle(keys.receiptHandle, group, lease);
    const raw = Buffer.from(h, "base64url");
    for (let i = 0; i < raw.length; i++) {
      const forged = Buffer.from(raw);
      forged[i] = forged[i]! ^ 1;
      expect(
        decodeReceiptHandle(keys.receiptHandle, group, forged.toString("base64url")),
      ).toBeNull();
    }
    const other = deriveSecretKeys("another-secret-another-secret-another", "iad1");
    expect(decodeReceiptHandle(other.receiptHandle, group, h)).toBeNull();
    const otherRegion = deriveSecretKeys("unit-test-secret-unit-test-secret-!!", "sfo1");
    expect(decodeReceiptHandle(otherRegion.receiptHandle, group, h)).toBeNull();
    for (const junk of ["", "x", h + "A", h.slice(1), "%%%", "A".repeat(h.length)]) {
      expect(decodeReceiptHandle(keys.receiptHandle, group, junk)).toBeNull();
    }
  });

  it("keep namespaces apart even when the parts would concatenate alike", () => {
    const a = makeNamespace("ab", "c", "e", null);
    const b = makeNamespace("a", "bc", "e", null);
    expect(a.key).not.toBe(b.key);
  });
});

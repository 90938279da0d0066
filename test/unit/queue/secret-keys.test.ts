import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deriveSecretKeys, mac } from "../../../src/queue/identity/secret-keys.js";

/** The reference: Node's HMAC over the same framing (each part followed by "\n"). */
function reference(key: Buffer, parts: readonly (string | Buffer)[], bytes = 16): Buffer {
  const h = createHmac("sha256", key);
  for (const p of parts) h.update(p).update("\n");
  return h.digest().subarray(0, bytes);
}

describe("mac (HMAC-SHA256 through one-shot hashes)", () => {
  const keys = deriveSecretKeys("unit-test-secret-unit-test-secret-!!", "iad1");

  it("gives createHmac's bytes for the shapes the queue uses", () => {
    const body = randomBytes(24);
    const parts = [body, '["team","prj","production",null]', "orders", "billing"];
    expect(mac(keys.receiptHandle, parts)).toEqual(reference(keys.receiptHandle, parts));
    expect(mac(keys.duplicateId, ["ns", "t", "1a", "rand"], 12)).toEqual(
      reference(keys.duplicateId, ["ns", "t", "1a", "rand"], 12),
    );
  });

  it("agrees on keys of every length, unicode text, empty and large parts", () => {
    for (const keyLength of [1, 32, 63, 64, 65, 200]) {
      const key = randomBytes(keyLength);
      const cases: (string | Buffer)[][] = [
        [],
        [""],
        ["ünïcødé ✓ 𝄞", Buffer.alloc(0)],
        ["a".repeat(5000), randomBytes(3000), "€".repeat(700)],
      ];
      for (const parts of cases) {
        expect(mac(key, parts, 32)).toEqual(reference(key, parts, 32));
        expect(mac(key, parts)).toEqual(reference(key, parts));
      }
    }
  });

  it("keeps keys apart and is not changed by a call in between", () => {
    const a = mac(keys.receiptHandle, ["x"]);
    const b = mac(keys.duplicateId, ["x"]);
    expect(a).not.toEqual(b);
    mac(keys.receiptHandle, ["y".repeat(10_000)]);
    expect(mac(keys.receiptHandle, ["x"])).toEqual(a);
  });
});

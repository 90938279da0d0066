import { describe, expect, it } from "vitest";
import {
  duplicateMessageId,
  newNonce,
  parseMessageId,
  storedMessageId,
} from "../../../src/queue/identity/message-id.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { deriveSecretKeys } from "../../../src/queue/identity/secret-keys.js";

const keys = deriveSecretKeys("unit-test-secret-unit-test-secret-!!", "iad1");
const topic = { namespace: makeNamespace("t", "p", "e", null), topic: "orders" };

describe("message IDs", () => {
  it("locate a stored message by sequence and nonce", () => {
    const nonce = newNonce();
    const id = storedMessageId(1_000_000, nonce);
    expect(encodeURIComponent(id)).toBe(id);
    expect(parseMessageId(keys.duplicateId, topic, id)).toEqual({
      kind: "stored",
      seq: 1_000_000,
      nonce,
    });
  });

  it("draw nonces of 16 base64url characters that do not repeat, across pool refills", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const n = newNonce();
      expect(n).toMatch(/^[A-Za-z0-9_-]{16}$/);
      seen.add(n);
    }
    expect(seen.size).toBe(1000);
  });

  it("make a duplicate's ID point at its original, unforgeably and per topic", () => {
    const id = duplicateMessageId(keys.duplicateId, topic, 77);
    expect(encodeURIComponent(id)).toBe(id);
    expect(parseMessageId(keys.duplicateId, topic, id)).toEqual({
      kind: "duplicate",
      originalSeq: 77,
    });
    expect(duplicateMessageId(keys.duplicateId, topic, 77)).not.toBe(id);
    expect(parseMessageId(keys.duplicateId, { ...topic, topic: "other" }, id)).toBeNull();
    const forged = id.replace(/^x25_/, "x26_");
    expect(forged).not.toBe(id);
    expect(parseMessageId(keys.duplicateId, topic, forged)).toBeNull();
    expect(parseMessageId(keys.receiptHandle, topic, id)).toBeNull();
  });

  it("reject anything malformed", () => {
    for (const bad of [
      "",
      "m",
      "m0_AAAAAAAAAAAAAAAA",
      "m1_short",
      "M1_AAAAAAAAAAAAAAAA",
      "m1_AAAAAAAAAAAAAAAA_",
      "mzzzzzzzzzzzz_AAAAAAAAAAAAAAAA",
      "../m1",
    ]) {
      expect(parseMessageId(keys.duplicateId, topic, bad), bad).toBeNull();
    }
  });
});

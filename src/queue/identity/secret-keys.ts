// Sub-keys derived from VQS_RECEIPT_SECRET, one per purpose and region, so a MAC made for one kind
// of token can never be replayed as another, nor in another region (whose sequences differ), even
// when operators share one secret across regions.
import { createHmac, hash } from "node:crypto";

export interface SecretKeys {
  readonly receiptHandle: Buffer;
  readonly duplicateId: Buffer;
}

export function deriveSecretKeys(secret: string, region: string): SecretKeys {
  const derive = (purpose: string) =>
    createHmac("sha256", secret).update(`${purpose}\n${region}`).digest();
  return Object.freeze({
    receiptHandle: derive("vqs/receipt-handle/v1"),
    duplicateId: derive("vqs/duplicate-id/v1"),
  });
}

/*
 * HMAC-SHA256 (RFC 2104) computed as its definition, H(K ^ opad || H(K ^ ipad || m)), with
 * Node's one-shot crypto.hash() and the padded keys prepared once per key. It gives the same
 * bytes as createHmac in half the time (3 µs against 6 µs here): createHmac builds a native
 * object per call and every update() crosses into C++, which made it a tenth of a busy gateway's
 * CPU (every receive issues a handle per message, every acknowledge verifies one). The digests
 * come back as "binary" (latin1) strings, one byte per character, because a string result is
 * cheaper than a Buffer from crypto.hash on Node 20.
 */
const BLOCK = 64;

interface Pads {
  readonly inner: Buffer;
  /** opad-keyed block followed by room for the inner digest. */
  readonly outer: Buffer;
}

const padsByKey = new WeakMap<Buffer, Pads>();

function padsOf(key: Buffer): Pads {
  let pads = padsByKey.get(key);
  if (!pads) {
    // RFC 2104: a key longer than the block is hashed first.
    const k = key.length > BLOCK ? Buffer.from(hash("sha256", key, "binary"), "binary") : key;
    const inner = Buffer.alloc(BLOCK, 0x36);
    const outer = Buffer.alloc(BLOCK + 32, 0x5c);
    for (let i = 0; i < k.length; i++) {
      inner[i]! ^= k[i]!;
      outer[i]! ^= k[i]!;
    }
    pads = { inner, outer };
    padsByKey.set(key, pads);
  }
  return pads;
}

/** One message buffer, reused: mac() is synchronous, so no two calls share it at once. */
let scratch = Buffer.allocUnsafe(1024);

/** HMAC-SHA256 over the parts, each followed by "\n", truncated to `bytes` bytes. */
export function mac(key: Buffer, parts: readonly (string | Buffer)[], bytes = 16): Buffer {
  const pads = padsOf(key);
  let size = BLOCK;
  for (const p of parts) size += (typeof p === "string" ? p.length * 3 : p.length) + 1;
  if (size > scratch.length) scratch = Buffer.allocUnsafe(Math.max(size, 2 * scratch.length));
  pads.inner.copy(scratch, 0);
  let at = BLOCK;
  for (const p of parts) {
    at += typeof p === "string" ? scratch.write(p, at, "utf8") : p.copy(scratch, at);
    scratch[at++] = 0x0a;
  }
  pads.outer.write(hash("sha256", scratch.subarray(0, at), "binary"), BLOCK, "binary");
  return Buffer.from(hash("sha256", pads.outer, "binary").slice(0, bytes), "binary");
}

// Sub-keys derived from VQS_RECEIPT_SECRET, one per purpose and region, so a MAC made for one kind
// of token can never be replayed as another, nor in another region (whose sequences differ), even
// when operators share one secret across regions.
import { createHmac } from "node:crypto";

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

/** HMAC-SHA256 truncated to `bytes` bytes. */
export function mac(key: Buffer, parts: readonly (string | Buffer)[], bytes = 16): Buffer {
  const h = createHmac("sha256", key);
  for (const p of parts) {
    h.update(p);
    h.update("\n");
  }
  return h.digest().subarray(0, bytes);
}

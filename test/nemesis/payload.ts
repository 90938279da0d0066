// The workload's payloads and what the history keeps of them. A small payload is its own text (a
// body label like `k3-17`); a large one (a few MB, above the gateway's inline limit, so it goes
// through the large-body store) is its label, a line break and bytes derived from the label, the
// same on every retry. The history keeps the label and the SHA-256 of the bytes, never the bytes:
// the checker compares every delivered body's SHA-256 with the published one's.
import { createHash } from "node:crypto";

/** A large payload: `label` + "\n" + `size` bytes from a generator seeded by the label. */
export function largePayload(label: string, size: number): Buffer {
  const out = Buffer.allocUnsafe(label.length + 1 + size);
  const head = out.write(`${label}\n`, "latin1");
  // xorshift32 seeded by an FNV-1a hash of the label: fast, and the same bytes for a retry.
  let x = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) x = Math.imul(x ^ label.charCodeAt(i), 0x01000193) >>> 0;
  x ||= 1;
  let i = head;
  for (; i + 4 <= out.length; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  for (; i < out.length; i++) out[i] = i & 0xff;
  return out;
}

/** The body label of delivered bytes: the first line of a large payload, else the whole text. */
export function labelOf(bytes: Buffer): string {
  if (bytes.length > 4096 && bytes[0] === 0x4c /* "L" */) {
    const nl = bytes.indexOf(0x0a);
    if (nl > 0 && nl < 64) return bytes.toString("latin1", 0, nl);
  }
  return bytes.toString();
}

export function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

// The send time a latency message carries, readable in another process: the first 8 bytes are
// the sender's wall clock in ms (a double), the next 4 a marker, so backlog messages (whose bytes
// are arbitrary) are never mistaken for latency messages. Sender and endpoint run on one host and
// read the same clock (performance.timeOrigin + performance.now(): sub-millisecond).

const MARKER = Buffer.from("VQSL");
const HEADER = 8 + MARKER.length;

/** This process's wall clock, ms since the epoch, with sub-millisecond resolution. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A copy of `template` stamped with the send time (now). */
export function stampNow(template: Buffer): Buffer {
  if (template.length < HEADER) throw new Error(`a stamped payload needs ${HEADER} bytes`);
  const b = Buffer.from(template);
  b.writeDoubleLE(nowMs(), 0);
  MARKER.copy(b, 8);
  return b;
}

/** ms from the stamp in `payload` to now, or null when the payload carries none. */
export function latencyOf(payload: Uint8Array): number | null {
  if (payload.length < HEADER) return null;
  const b = Buffer.from(payload.buffer, payload.byteOffset, HEADER);
  if (!b.subarray(8, HEADER).equals(MARKER)) return null;
  return nowMs() - b.readDoubleLE(0);
}

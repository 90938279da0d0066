// JetStream's ack reply subjects: parsed on delivery, rebuilt from a receipt handle later (by any
// gateway). The server reads only the stream, consumer and sequences from it.

export interface AckInfo {
  readonly deliveryCount: number;
  readonly streamSeq: number;
  readonly deliverySeq: number;
  readonly timestampToken: string;
}

/** Parses `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>` (v1) and the
 * v2 form with domain and account hash tokens. */
export function parseAckSubject(subject: string): AckInfo | null {
  const t = subject.split(".");
  const base = t.length === 9 ? 4 : t.length >= 11 ? 6 : -1;
  if (base < 0 || t[0] !== "$JS" || t[1] !== "ACK") return null;
  const deliveryCount = Number(t[base]);
  const streamSeq = Number(t[base + 1]);
  const deliverySeq = Number(t[base + 2]);
  if (![deliveryCount, streamSeq, deliverySeq].every((n) => Number.isSafeInteger(n) && n > 0)) {
    return null;
  }
  return { deliveryCount, streamSeq, deliverySeq, timestampToken: t[base + 3] ?? "0" };
}

export function ackSubject(
  stream: string,
  consumer: string,
  lease: { deliveryCount: number; streamSeq: number; deliverySeq: number },
): string {
  return `$JS.ACK.${stream}.${consumer}.${lease.deliveryCount}.${lease.streamSeq}.${lease.deliverySeq}.0.0`;
}

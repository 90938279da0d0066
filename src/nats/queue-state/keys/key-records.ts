// Idempotency key records, as read by the publish path and by the timers that delete them. A key's
// record is a tiny message on `vqs.<ns>.<h>.k.<token>` whose payload is the sequence of the key's
// current message. Both reads here decide what is stored or deleted, so both go to the stream
// leader: a lagging replica could show no record, an older one, or no message, and the key would
// be given to a second copy (docs/architecture.md, "Reads that decide").
import type { JetStreamManager } from "@nats-io/jetstream";
import { decodeMessage, rfc3339ToMs } from "../../messages/message-codec.js";
import { leaderGet } from "../../messages/reads.js";

/** A key's records are deleted this long after its message's expiry (clock estimates). */
export const FORGET_MARGIN_MS = 1000;

export interface KeyRecord {
  /** The record's own sequence (what a compare-and-set expects). */
  readonly recordSeq: number;
  /** The key's message. */
  readonly messageSeq: number;
}

export type KeyMessage =
  | { readonly live: false }
  | {
      readonly live: true;
      /** Still on the parked (delayed) subject: its move may be pending. */
      readonly parked: boolean;
      readonly expiresAtMs: number;
    };

/** The key's current record (the last message on its subject), or null. */
export async function readKeyRecord(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
): Promise<KeyRecord | null> {
  const m = await leaderGet(jsm, stream, { last_by_subj: subject });
  if (!m) return null;
  const messageSeq = Number(m.string());
  return Number.isSafeInteger(messageSeq) ? { recordSeq: m.seq, messageSeq } : null;
}

/** Whether a key's message lives, exactly: its server time plus its TTL, against `now`. */
export async function readKeyMessage(
  jsm: JetStreamManager,
  stream: string,
  seq: number,
  parkedSubject: string | null,
  now: number,
): Promise<KeyMessage> {
  const m = await leaderGet(jsm, stream, { seq });
  const message = m ? decodeMessage(m.seq, rfc3339ToMs(m.timestamp), m.header, m.data) : null;
  if (!m || !message || message.expiresAtMs <= now) return { live: false };
  return { live: true, parked: m.subject === parkedSubject, expiresAtMs: message.expiresAtMs };
}

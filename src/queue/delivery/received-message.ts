// A message as a receive hands it out: its fields, the receipt handle of its lease, and a large
// body's reference. Its own module, so that what builds one (hand-out.ts) and what answers with
// one (queue-service.ts, the pusher, the HTTP encoders) import it without importing each other.
import type { DeadLetterOrigin, MessageHeaders, TraceContext } from "../broker.js";
import type { BodyRef } from "../bodies.js";
import type { DownloadSlot } from "../download-slots.js";

export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly deliveryCount: number;
  readonly publishedAt: Date;
  readonly expiresAt: Date;
  readonly contentType: string | null;
  /** The inline body; empty when `body` is set. */
  readonly payload: Uint8Array;
  /** A large body, kept in the body store: read it with `QueueService.openBody`. */
  readonly body: BodyRef | null;
  /** When the lease this delivery was handed out with ends (the receipt handle's deadline). */
  readonly visibilityDeadline: Date;
  /**
   * The download slot receive by ID reserved for `body` before leasing it: give it to
   * `openBody`, or release it if the body is never read.
   */
  readonly downloadSlot?: DownloadSlot;
  /** The trace context its publish carried. */
  readonly trace: TraceContext | null;
  /** The headers its publish gave it (its own; names in lower case). */
  readonly headers: MessageHeaders;
  /** Where it came from, when it is a dead-letter copy. */
  readonly deadLetter: DeadLetterOrigin | null;
}

// Idempotency keys with a window of exactly the original's lifetime. A key's current message is
// recorded in the topic's own stream, on `vqs.<h>.k.<token>`, as that message's sequence. A
// publish reads the record (one Direct Get): while its message lives, the publish is a duplicate
// and nothing is stored. Otherwise it stores the message and moves the record to it with a
// compare-and-set (Nats-Expected-Last-Subject-Sequence), so of any number of racing publishes
// exactly one message holds the key. Racers that read the same record also share one Nats-Msg-Id
// (`k.<token>.<record seq>`), so within the stream's short duplicate window they do not even
// store a second copy; a racer slower than the window loses the compare-and-set and deletes its
// copy. Each record is deleted when its message expires (a timer in the schedule stream), so
// records are bounded by live keys. See docs/architecture.md, "Idempotency keys".
import { JetStreamApiCodes, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { AppError } from "../../errors.js";
import type { PublishOutcome } from "../../queue/broker.js";
import type { DelayScheduler } from "../scheduling/delay-scheduler.js";
import { decodeMessage, rfc3339ToMs } from "../core/message-codec.js";
import { directGet } from "../core/direct-get.js";
import type { TopicNames } from "../core/naming.js";
import type { PubAck } from "../core/requests.js";
import { isApiError } from "../core/errors.js";

export interface IdempotencyKeysDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly scheduler: DelayScheduler;
  readonly now: () => number;
  readonly requestTimeoutMs: number;
}

/** Stores the message with the given Nats-Msg-Id. */
export type KeyedSend = (msgId: string) => Promise<PubAck>;

interface KeyRecord {
  readonly recordSeq: number;
  readonly messageSeq: number;
}

type Original =
  | { readonly live: false }
  | { readonly live: true; readonly parked: boolean; readonly expiresAtMs: number };

/** Rounds of read and compare-and-set before giving up (a lost round means the record moved:
 * the next round normally ends as a duplicate of the winner). */
const MAX_ROUNDS = 6;

/** A record's expiry timer fires this long after its message's expiry (clock estimates). */
const FORGET_MARGIN_MS = 1000;

export class IdempotencyKeys {
  readonly #d: IdempotencyKeysDeps;

  constructor(deps: IdempotencyKeysDeps) {
    this.#d = deps;
  }

  /**
   * Publishes a keyed message: stored, or a duplicate of the key's live message. `lifetimeMs` is
   * how long the message has to live from now (its retention, less any time already spent).
   * `onStored` runs once the message is stored and before it takes the key (the delayed
   * message's timer).
   */
  async publish(
    names: TopicNames,
    token: string,
    lifetimeMs: number,
    send: KeyedSend,
    onStored: (seq: number) => Promise<void>,
  ): Promise<PublishOutcome> {
    let head = await this.#head(names, token);
    let ours: PubAck | null = null;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (head && ours && head.messageSeq === ours.seq) {
        return outcome(ours); // our compare-and-set landed although its answer was lost
      }
      if (head) {
        const original = await this.#original(names, head.messageSeq);
        if (original.live) {
          // Another publish of the key holds it: ours (stored by a racer slower than the
          // duplicate window) must not be delivered.
          if (ours && !ours.duplicate) await this.#discard(names, ours.seq);
          if (original.parked) await this.#d.scheduler.schedule(names, head.messageSeq, true);
          return { kind: "duplicate", originalSeq: head.messageSeq };
        }
      }
      const expected = head?.recordSeq ?? 0;
      if (!ours) {
        ours = await send(`k.${token}.${expected.toString(36)}`);
        if (!ours.duplicate) await onStored(ours.seq);
      }
      const recordSeq = await this.#claim(names, token, expected, ours.seq);
      if (recordSeq !== null) {
        // A message we stored just now expires no sooner than `lifetimeMs` from its store; a
        // duplicate's original is read back (it may be one that has just expired).
        const expiresAtMs = ours.duplicate
          ? await this.#original(names, ours.seq).then((o) => (o.live ? o.expiresAtMs : null))
          : this.#d.now() + lifetimeMs + FORGET_MARGIN_MS;
        if (expiresAtMs !== null) {
          await this.#d.scheduler.forget(names.stream, recordSeq, expiresAtMs);
          return outcome(ours);
        }
        ours = null; // a same-window duplicate of a message that has just expired: store anew
      }
      // The record moved (a racer took the key, or the record of an expired message was
      // deleted): look again. A message we stored is kept unless another one holds the key.
      head = await this.#head(names, token);
    }
    throw new AppError("storage_unavailable", {
      message: "Too many concurrent publishes with this idempotency key; try again.",
    });
  }

  async #head(names: TopicNames, token: string): Promise<KeyRecord | null> {
    const m = await directGet(this.#d.jsm, names.stream, {
      last_by_subj: `${names.keyPrefix}.${token}`,
    });
    if (!m) return null;
    const messageSeq = Number(m.string());
    return Number.isSafeInteger(messageSeq) ? { recordSeq: m.seq, messageSeq } : null;
  }

  /** Whether the message a record points at still lives (exactly: its server time plus TTL). */
  async #original(names: TopicNames, seq: number): Promise<Original> {
    const m = await directGet(this.#d.jsm, names.stream, { seq });
    const message = m ? decodeMessage(m.seq, rfc3339ToMs(m.timestamp), m.header, m.data) : null;
    if (!m || !message || message.expiresAtMs <= this.#d.now()) return { live: false };
    return { live: true, parked: m.subject === names.delayed, expiresAtMs: message.expiresAtMs };
  }

  /** Points the key at `messageSeq` if its record is still `expected` (0: none); null if not. */
  async #claim(
    names: TopicNames,
    token: string,
    expected: number,
    messageSeq: number,
  ): Promise<number | null> {
    try {
      const ack = await this.#d.js.publish(`${names.keyPrefix}.${token}`, String(messageSeq), {
        expect: { lastSubjectSequence: expected, streamName: names.stream },
        timeout: this.#d.requestTimeoutMs,
      });
      return ack.seq;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamWrongLastSequence)) return null;
      throw err;
    }
  }

  async #discard(names: TopicNames, seq: number): Promise<void> {
    try {
      await this.#d.jsm.streams.deleteMessage(names.stream, seq, false);
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.NoMessageFound)) throw err;
    }
  }
}

function outcome(ack: PubAck): PublishOutcome {
  return ack.duplicate
    ? { kind: "duplicate", originalSeq: ack.seq }
    : { kind: "stored", seq: ack.seq };
}

// Idempotency keys with a window of exactly the original's lifetime. A key's current message is
// recorded in the topic's own stream (key-records.ts). A publish reads the record and its message
// from the stream leader: while the message lives, the publish is a duplicate and nothing is
// stored. Otherwise it stores the message and moves the record to it with a compare-and-set
// (Nats-Expected-Last-Subject-Sequence), so of any number of racing publishes exactly one message
// holds the key. Racers that read the same record share one Nats-Msg-Id, so within the stream's
// short duplicate window they store one copy (and so does a client's retry after a failure). A
// key's records go once its message has expired: each record carries a per-message TTL to a
// second past that expiry (nats-server 2.11+), or, on older servers, a timer that deletes them is
// added before anything is stored. See docs/architecture.md, "Idempotency keys" and "A retried
// publish".
import { JetStreamApiCodes, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { AppError } from "../../../errors.js";
import type { PublishOutcome } from "../../../queue/broker.js";
import { isApiError, isMessageGone, isNoResponders, StreamGoneError } from "../../core/errors.js";
import type { TopicNames } from "../../core/naming.js";
import type { PubAck } from "../../core/requests.js";
import type { DelayScheduler } from "../../scheduling/delay-scheduler.js";
import {
  FORGET_MARGIN_MS,
  readKeyMessage,
  readKeyRecord,
  type KeyMessage,
  type KeyRecord,
} from "./key-records.js";

export interface IdempotencyKeysDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly scheduler: DelayScheduler;
  readonly now: () => number;
  readonly requestTimeoutMs: number;
  /**
   * Records expire by themselves (a `Nats-TTL` to a second past their message's expiry; the
   * topic's stream allows per-message TTL): no timer per keyed publish.
   */
  readonly recordTtl: boolean;
}

/** Stores the message with the given Nats-Msg-Id. */
export type KeyedSend = (msgId: string) => Promise<PubAck>;

/** Rounds of read and compare-and-set before giving up (a lost round means the record moved:
 * the next round normally ends as a duplicate of the winner). */
const MAX_ROUNDS = 6;

export class IdempotencyKeys {
  readonly #d: IdempotencyKeysDeps;

  constructor(deps: IdempotencyKeysDeps) {
    this.#d = deps;
  }

  /**
   * Publishes a keyed message: stored, or a duplicate of the key's live message. `lifetimeMs` is
   * how long the message has to live from now (its retention, less any time already spent).
   * `onStored` runs once the message is stored and before it takes the key (the delayed
   * message's timer); it must be idempotent. Throws StreamGoneError when the topic's stream is
   * missing and nothing was stored.
   */
  async publish(
    names: TopicNames,
    token: string,
    lifetimeMs: number,
    send: KeyedSend,
    onStored: (seq: number) => Promise<void>,
  ): Promise<PublishOutcome> {
    const subject = `${names.keyPrefix}.${token}`;
    let head = await this.#head(names, subject);
    let ours: PubAck | null = null;
    /**
     * When the key's records may go: a second past our message's expiry, counted from when its
     * store was answered (no earlier than the store itself), so a slow store cannot leave the
     * message living past its record.
     */
    let forgetAt = 0;
    /** A Nats-Msg-Id of this round's record that led to a message no longer there. */
    let burnt = false;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (head && ours && head.messageSeq === ours.seq) {
        return outcome(ours); // our compare-and-set landed although its answer was lost
      }
      if (head) {
        const original = await this.#message(names, head.messageSeq);
        if (original.live) {
          // Another publish of the key holds it: a copy we stored must not be delivered.
          if (ours && !ours.duplicate) await this.#discard(names, ours.seq);
          if (original.parked) await this.#d.scheduler.schedule(names, head.messageSeq, true);
          return { kind: "duplicate", originalSeq: head.messageSeq };
        }
      }
      const expected = head?.recordSeq ?? 0;
      if (!ours) {
        // Without record TTLs, first the timer that deletes the key's records once its message
        // has expired, so that whatever fails later, no record is left that nothing deletes.
        if (!this.#d.recordTtl) {
          // The timer reads the key again when due and waits while a message holds it, so a
          // deadline taken before the store is safe there.
          const at = this.#d.now() + lifetimeMs + FORGET_MARGIN_MS;
          await this.#d.scheduler.forgetKey(names, subject, at, `${token}.${expected}`);
        }
        // Racers that read the same record share the Nats-Msg-Id, so they store one copy. Once
        // that ID led to a copy that is gone (discarded) or expired, a fresh one is used.
        const msgId = `k.${token}.${expected.toString(36)}${burnt ? `.${round}` : ""}`;
        ours = await this.#send(names, send, msgId);
        forgetAt = this.#d.now() + lifetimeMs + FORGET_MARGIN_MS;
        // Should this fail (a delayed message's timer), the copy stays: no key holds it and,
        // parked without a timer, it is never delivered; the client's retry within the
        // duplicate window finds it by its Nats-Msg-Id and completes it.
        await onStored(ours.seq);
      }
      if (ours.duplicate) {
        // Stored under this Nats-Msg-Id by another publish within the duplicate window (a racer,
        // or a client's earlier attempt that failed after storing): it takes the key if it lives.
        if (!(await this.#message(names, ours.seq)).live) {
          ours = null;
          burnt = true;
          head = await this.#head(names, subject);
          continue;
        }
      }
      if (await this.#claim(names, subject, expected, ours, forgetAt)) return outcome(ours);
      // The record moved (a racer took the key, or the record of an expired message was
      // deleted): look again.
      head = await this.#head(names, subject);
    }
    throw new AppError("storage_unavailable", {
      message: "Too many concurrent publishes with this idempotency key; try again.",
    });
  }

  async #head(names: TopicNames, subject: string): Promise<KeyRecord | null> {
    try {
      return await readKeyRecord(this.#d.jsm, names.stream, subject);
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) {
        throw new StreamGoneError(names.stream, err);
      }
      throw err;
    }
  }

  #message(names: TopicNames, seq: number): Promise<KeyMessage> {
    return readKeyMessage(this.#d.jsm, names.stream, seq, names.delayed, this.#d.now());
  }

  async #send(names: TopicNames, send: KeyedSend, msgId: string): Promise<PubAck> {
    try {
      return await send(msgId);
    } catch (err) {
      if (isNoResponders(err)) throw new StreamGoneError(names.stream, err);
      throw err;
    }
  }

  /**
   * Points the key at our message if its record is still `expected` (0: none). True when it did;
   * false when the record had moved. With record TTLs the record expires at `forgetAt`. When the answer is lost, the leader is asked where the
   * record points. A copy no key holds is never deleted after a failure: the compare-and-set may
   * still land (a timeout), or the client's retry may already have found the copy by its
   * Nats-Msg-Id and taken the key for it; deleting it then would lose an acknowledged message.
   */
  async #claim(
    names: TopicNames,
    subject: string,
    expected: number,
    ours: PubAck,
    forgetAt: number,
  ): Promise<boolean> {
    // Whole seconds, at least one: a record whose message has already expired (a publish
    // stalled past its retention) goes a second later.
    const ttl = this.#d.recordTtl
      ? { ttl: `${Math.max(1, Math.ceil((forgetAt - this.#d.now()) / 1000))}s` }
      : {};
    try {
      await this.#d.js.publish(subject, String(ours.seq), {
        expect: { lastSubjectSequence: expected, streamName: names.stream },
        timeout: this.#d.requestTimeoutMs,
        ...ttl,
      });
      return true;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamWrongLastSequence)) return false;
      if (isNoResponders(err)) throw new StreamGoneError(names.stream, err);
      const head = await this.#head(names, subject).catch(() => null);
      if (head?.messageSeq === ours.seq) return true;
      throw err;
    }
  }

  async #discard(names: TopicNames, seq: number): Promise<void> {
    try {
      await this.#d.jsm.streams.deleteMessage(names.stream, seq, false);
    } catch (err) {
      if (!isMessageGone(err)) throw err;
    }
  }
}

function outcome(ack: PubAck): PublishOutcome {
  return ack.duplicate
    ? { kind: "duplicate", originalSeq: ack.seq }
    : { kind: "stored", seq: ack.seq };
}

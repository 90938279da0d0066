// Handing pulled deliveries out, the same for a receive and a push: what of a batch may go
// (expired messages acknowledged, leases taken by ID honoured, deliveries past `maxDeliveries`
// moved to the dead-letter topic), each delivery's lease, and the message with its receipt handle.
import type { Broker, Delivery, StoredMessage } from "../broker.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import type { IdLeases } from "../id-leases.js";
import type { IdLeaseLedger } from "../ledgers/id-lease-ledger.js";
import type { LeaseLedger } from "../ledgers/lease-ledger.js";
import { storedMessageId } from "../identity/message-id.js";
import { encodeReceiptHandle, type Lease } from "../identity/receipt-handle.js";
import type { SecretKeys } from "../identity/secret-keys.js";
import type { Logger } from "../../logger.js";
import type { GroupAddress } from "../namespace.js";
import type { QueueObserver } from "../observer.js";
import type { ReceivedMessage } from "./received-message.js";
import type { ConsumerSettings, DeadLetterSettings } from "../settings/consumer-settings.js";
import type { MessageCopies } from "./message-copies.js";

/** A message whose move to the dead-letter topic failed comes back this much later. */
const DEAD_LETTER_RETRY_MS = 5000;

export interface HandOutDeps {
  readonly broker: Broker;
  readonly leases: Pick<LeaseLedger, "recordDelivery" | "noteDeadLettered">;
  readonly idLedger: Pick<IdLeaseLedger, "usesIdLeases">;
  readonly keys: SecretKeys;
  readonly now: () => number;
  readonly observer: QueueObserver;
  readonly idLeases: IdLeases;
  readonly copies: MessageCopies;
  readonly settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly log: Pick<Logger, "warn"> | null;
  /** Flow control: an expired or dead-lettered message settles (an ordered key's next goes). */
  readonly flow?: Pick<FlowGate, "settled">;
}

export class HandOut {
  readonly #broker: Broker;
  readonly #leases: Pick<LeaseLedger, "recordDelivery" | "noteDeadLettered">;
  readonly #idLedger: Pick<IdLeaseLedger, "usesIdLeases">;
  readonly #keys: SecretKeys;
  readonly #now: () => number;
  readonly #observer: QueueObserver;
  readonly #idLeases: IdLeases;
  readonly #copies: MessageCopies;
  readonly #settingsOf: (group: GroupAddress) => ConsumerSettings | null;
  readonly #log: Pick<Logger, "warn"> | null;
  readonly #flow: Pick<FlowGate, "settled"> | null;

  constructor(deps: HandOutDeps) {
    this.#broker = deps.broker;
    this.#leases = deps.leases;
    this.#idLedger = deps.idLedger;
    this.#keys = deps.keys;
    this.#now = deps.now;
    this.#observer = deps.observer;
    this.#idLeases = deps.idLeases;
    this.#copies = deps.copies;
    this.#settingsOf = deps.settingsOf;
    this.#log = deps.log;
    this.#flow = deps.flow ?? null;
  }

  /**
   * Hands out deliveries that were pulled for the group by someone else than a receive (the
   * pusher), exactly as a receive would: each with a lease of `leaseMs` and a receipt handle.
   * Deliveries it may not hand out (expired, leased or acknowledged by ID) are dealt with and
   * left out. On a failure every delivery is released.
   */
  async pulled(
    group: GroupAddress,
    batch: readonly Delivery[],
    leaseMs: number,
  ): Promise<{ readonly lease: Lease; readonly message: ReceivedMessage }[]> {
    const deadlineMs = this.#now() + leaseMs;
    let live: Delivery[];
    try {
      live = await this.admit(group, batch, deadlineMs);
      await this.lease(group, live, leaseMs);
    } catch (err) {
      await Promise.allSettled(batch.map((d) => this.#broker.setLease(group, d, 0)));
      throw err;
    }
    return live.map((d) => {
      const lease = groupLease(d, deadlineMs);
      return { lease, message: this.handOut(group, d, deadlineMs, lease) };
    });
  }

  /**
   * What of a pulled batch may be handed out: expired messages are never delivered (the group
   * acknowledges them silently), and for groups that used receive by ID, messages leased or
   * acknowledged by ID are held back (IdLeases.honour).
   */
  async admit(
    group: GroupAddress,
    batch: readonly Delivery[],
    deadlineMs: number,
  ): Promise<Delivery[]> {
    const now = this.#now();
    const expired = batch.filter((d) => d.message.expiresAtMs <= now);
    await Promise.all(
      expired.map(async (d) => {
        await this.#broker.ack(group, d);
        await this.#flow?.settled(group, d.streamSeq, d.message);
      }),
    );
    const fresh = batch.filter((d) => d.message.expiresAtMs > now);
    const admitted = (await this.#idLedger.usesIdLeases(group))
      ? await this.#idLeases.honour(group, fresh, deadlineMs)
      : fresh;
    const dl = this.#settingsOf(group)?.deadLetter;
    if (!dl) return admitted;
    const kept = await Promise.all(
      admitted.map(async (d) => {
        if (d.deliveryCount <= dl.maxDeliveries) return d;
        await this.#deadLetterDelivery(group, d, dl);
        return null;
      }),
    );
    return kept.filter((d): d is Delivery => d !== null);
  }

  /**
   * A delivery past the group's `maxDeliveries` goes to the dead-letter topic instead and leaves
   * the group (acknowledged there). If that fails, the message comes back soon and is tried
   * again; the copy is stored once whichever attempt (or gateway) makes it.
   */
  async #deadLetterDelivery(
    group: GroupAddress,
    d: Delivery,
    dl: DeadLetterSettings,
  ): Promise<void> {
    try {
      await this.#copies.toDeadLetter(group, d.message, d.streamSeq, d.deliveryCount, dl);
      await this.#broker.ack(group, d);
      const now = this.#now();
      await this.#idLeases.noteCursorChange(group, groupLease(d, now), now, true);
      this.#observer.deadLettered(group);
      await this.#flow?.settled(group, d.streamSeq, d.message);
      await this.#leases.noteDeadLettered(group).catch(() => undefined);
    } catch (err) {
      this.#log?.warn(
        { err, topic: group.topic, group: group.group, deadLetterTopic: dl.topic },
        "could not move a message to its dead-letter topic; it comes back and is tried again",
      );
      await this.#broker.setLease(group, d, DEAD_LETTER_RETRY_MS).catch(() => undefined);
    }
  }

  /** Gives each delivery its lease, and records which delivery is current after a redelivery. */
  async lease(group: GroupAddress, live: readonly Delivery[], leaseMs: number): Promise<void> {
    await Promise.all(
      live.map(async (d) => {
        // JetStream gives the consumer's ack_wait by itself (a pushed group's is its push lease).
        if (leaseMs !== this.#broker.leaseMsOf(group)) {
          await this.#broker.setLease(group, d, leaseMs);
        }
        // A redelivery makes older handles stale: record which delivery is current.
        if (d.deliveryCount > 1) {
          await this.#leases.recordDelivery(group, d.streamSeq, d.deliveryCount);
        }
      }),
    );
  }

  handOut(
    group: GroupAddress,
    d: Delivery,
    deadlineMs: number,
    lease: Lease = groupLease(d, deadlineMs),
  ): ReceivedMessage {
    this.#observer.delivered(d.deliveryCount);
    return this.received(group, d.message, lease);
  }

  /** The message as a receive answers it, with the receipt handle of `lease`. */
  received(group: GroupAddress, message: StoredMessage, lease: Lease): ReceivedMessage {
    return {
      messageId: storedMessageId(message.idSeq, message.nonce),
      receiptHandle: encodeReceiptHandle(
        this.#keys.receiptHandle,
        group,
        lease,
        this.#broker.groupEpoch(group),
      ),
      deliveryCount: lease.deliveryCount,
      publishedAt: new Date(message.publishedAtMs),
      expiresAt: new Date(message.expiresAtMs),
      contentType: message.contentType,
      payload: message.payload,
      body: message.body,
      visibilityDeadline: new Date(lease.deadlineMs),
      trace: message.trace,
      headers: message.headers,
      deadLetter: message.deadLetter,
    };
  }
}

/** The lease of a delivery from the group's cursor, until `deadlineMs`. */
export function groupLease(d: Delivery, deadlineMs: number): Lease {
  return {
    kind: "group",
    streamSeq: d.streamSeq,
    deliverySeq: d.deliverySeq,
    deliveryCount: d.deliveryCount,
    deadlineMs,
  };
}

// Push delivery, one message at a time: a message pulled for a pushed group is handed out as a
// receive would hand it out (lease, receipt handle), POSTed to the group's URL as a CloudEvent,
// and settled by the outcome: a 2xx ends the push (and with `autoAck`
// acknowledges); anything else makes the message visible again after the retry delay, unless
// the handler already set its lease through the API, which wins; after a timeout the handler may
// still run, so the message never comes back before the lease it holds ends. What is pushed when
// is the PushScheduler's (push-scheduler.ts), the pulling the NATS adapter's (src/nats/push-feeds/);
// see docs/architecture.md, "Push delivery".
import type { Logger } from "../../logger.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import type { Delivery, GroupCursor, PushOutcomes } from "../broker.js";
import type { PushLedger } from "../ledgers/push-ledger.js";
import type { GroupAddress } from "../namespace.js";
import type { Lease } from "../identity/receipt-handle.js";
import type { ReceivedMessage } from "../delivery/received-message.js";
import type { GroupAcks } from "../delivery/group-acks.js";
import type { HandOut } from "../delivery/hand-out.js";
import type { ConsumerSettings, PushSettings } from "../settings/consumer-settings.js";
import { isPushUrlAllowed, type PushDestinations } from "../settings/push-destinations.js";
import { pushRequest } from "./cloud-event.js";
import { pushLeaseMs } from "./push-lease.js";
import {
  PushSettlement,
  type PushSettlementPorts,
  type PushSettlementRules,
} from "./push-settlement.js";
import {
  pushHealthOutcome,
  type PushObserver,
  type PushOutcome,
  type PushSigner,
  type PushTransport,
} from "./push-ports.js";
import { retryDelaySeconds } from "./retry-delay.js";

export interface PusherDeps {
  /** Hands a pulled delivery out as a receive does (the receive path's, from the root). */
  readonly handOut: Pick<HandOut, "pulled">;
  /** Acknowledges as an acknowledgement through the API does (for `autoAck`). */
  readonly acks: Pick<GroupAcks, "acknowledge">;
  /** Leases by ID and the cursor's leases through a handle, as the receive path sets them. */
  readonly idLeases: PushSettlementRules["idLeases"];
  readonly idLedger: PushSettlementRules["idLedger"];
  readonly groupLeases: PushSettlementRules["groupLeases"];
  /** The cursor (to set a pushed message's lease). */
  readonly broker: Pick<GroupCursor, "setLease"> & PushSettlementPorts;
  /** Where push health is told. */
  readonly outcomes: PushOutcomes;
  /** Holdbacks and handler leases (QueueContext.pushLedger). */
  readonly ledger: PushLedger;
  /**
   * Flow control (QueueContext.flow): the key slot GroupPushes took for a push is given back
   * when nothing is pushed, and when a failed push is released for its retry.
   */
  readonly flow?: Pick<FlowGate, "leaseMoved">;
  readonly transport: PushTransport;
  readonly signer: PushSigner;
  readonly observer: PushObserver;
  readonly log: Logger;
  readonly region: string;
  readonly now: () => number;
  /** Payloads above this go without body and handle (the client leases them by ID). */
  readonly inlineLimitBytes: number;
  /** Where each namespace's pushes may go (checked again before each push). */
  readonly destinations: PushDestinations;
}

export type PushedSettings = ConsumerSettings & { readonly push: PushSettings };

export class Pusher {
  readonly #d: PusherDeps;
  readonly #settle: PushSettlement;
  /** isPushUrlAllowed's answers by team, project and URL (a URL parse per push otherwise). */
  readonly #allowedUrls = new Map<string, boolean>();

  constructor(deps: PusherDeps) {
    this.#d = deps;
    this.#settle = new PushSettlement(deps.broker, deps.ledger, deps.now, deps);
  }

  /**
   * Pushes one delivery pulled for a pushed group. Resolves once the message is settled,
   * released for a retry, or held back (never rejects: failures are logged and the message's
   * lease brings it back).
   */
  async push(group: GroupAddress, delivery: Delivery, settings: PushedSettings): Promise<void> {
    try {
      const d = await this.#deferred(group, delivery, settings);
      if (d === null || !(await this.#push(group, d, settings))) {
        // Held back, expired, dead-lettered or leased by ID: its key's slot (if it took one) goes.
        await this.#d.flow?.leaseMoved(group, delivery.streamSeq, 0);
      }
    } catch (err) {
      this.#d.log.warn(
        { err, topic: group.topic, group: group.group },
        "push: failed before its outcome was known; the message comes back when its lease ends",
      );
    }
  }

  /**
   * `retry.initialDelaySeconds`: a message is first pushed this long after it became visible.
   * Earlier, it is held back (released until then, counted so that its delivery count stays
   * what the consumer saw); null when held back. A redelivery's count also leaves out the
   * releases of a message held at its namespace's push cap and never pushed (the feed counts
   * them the same way).
   */
  async #deferred(
    group: GroupAddress,
    d: Delivery,
    settings: PushedSettings,
  ): Promise<Delivery | null> {
    const initialMs = settings.retry.initialDelaySeconds * 1000;
    const held = d.deliveryCount > 1 ? await this.#d.ledger.holdbacks(group, d.streamSeq) : 0;
    const count = d.deliveryCount - held;
    if (initialMs === 0) return held === 0 ? d : { ...d, deliveryCount: count };
    const dueMs = d.message.visibleAtMs + initialMs;
    const waitMs = dueMs - this.#d.now();
    if (count <= 1 && waitMs > 0) {
      await this.#d.ledger.holdBack(group, d.streamSeq, held);
      await this.#d.broker.setLease(group, d, waitMs);
      return null;
    }
    return held === 0 ? d : { ...d, deliveryCount: count };
  }

  /** False when nothing was pushed (the delivery was not handed out). */
  async #push(group: GroupAddress, d: Delivery, settings: PushedSettings): Promise<boolean> {
    const push = settings.push;
    const leaseMs = pushLeaseMs(push);
    // Taken before the handle is made: a seek in between makes the autoAck's lease stale.
    const epoch = this.#settle.groupEpoch(group);
    const handed = await this.#d.handOut.pulled(group, [d], leaseMs);
    const out = handed[0];
    if (!out) return false; // expired, or held by a lease taken by ID
    const { lease, message } = out;
    if (!this.#allowed(group, push.url)) {
      // The operator narrowed the allow-lists since the settings were stored.
      this.#report(group, "blocked", 0, message, push, null);
      await this.#release(group, lease, settings, message.deliveryCount);
      return true;
    }
    // Above the inline limit (and unless a 2xx acknowledges, which needs the body there) the
    // client leases the message by ID: the cursor's lease is given up for that. A body in the
    // body store is never put into a push, autoAck or not: the endpoint reads it by ID, streamed.
    const inline =
      message.body === null && (push.autoAck || message.payload.length <= this.#d.inlineLimitBytes);
    if (!inline) await this.#settle.yieldToReceiveById(group, lease);
    const subject = pushSubject(group);
    const request = pushRequest({
      region: this.#d.region,
      topic: group.topic,
      group: group.group,
      message,
      visibilityDeadline: new Date(lease.deadlineMs),
      inline,
      jwt: await this.#d.signer.sign(push.url, subject),
      sentAtMs: this.#d.now(),
    });
    const started = performance.now();
    this.#d.observer.inFlight(1);
    let response;
    try {
      response = await this.#d.transport.post(
        push.url,
        request.headers,
        request.body,
        push.timeoutSeconds * 1000,
      );
    } finally {
      this.#d.observer.inFlight(-1);
    }
    const seconds = (performance.now() - started) / 1000;
    this.#report(group, response.outcome, seconds, message, push, response.status);
    if (response.outcome === "success") {
      if (push.autoAck) await this.#settle.acknowledge(group, lease, epoch);
      else if (!inline) await this.#settle.afterPushById(group, lease);
      return true;
    }
    // The handler set the message's lease itself (a retry directive, or extensions while it
    // ran): its word stands.
    if (await this.#settle.leaseSetByHandler(group, lease)) return true;
    if (response.outcome === "timeout") {
      // No answer: the handler may still be running, holding the lease it was given (and
      // extending it through the API, which its handle still may): not cut short.
      const seconds = retryDelaySeconds(settings.retry, message.deliveryCount);
      await this.#settle.releaseTimedOut(group, lease, seconds);
      return true;
    }
    await this.#release(group, lease, settings, message.deliveryCount);
    return true;
  }

  async #release(
    group: GroupAddress,
    lease: Lease,
    settings: PushedSettings,
    attempt: number,
  ): Promise<void> {
    const seconds = retryDelaySeconds(settings.retry, attempt);
    await this.#settle.release(group, lease, seconds);
  }

  /**
   * Whether the namespace's allow-lists take the URL; remembered per team, project and URL (the
   * lists are fixed per gateway).
   */
  #allowed(group: GroupAddress, url: string): boolean {
    const ns = group.namespace;
    const key = JSON.stringify([ns.team, ns.project, url]);
    let ok = this.#allowedUrls.get(key);
    if (ok === undefined) {
      const prefixes = this.#d.destinations.prefixesFor(ns);
      ok = prefixes !== null && isPushUrlAllowed(url, prefixes);
      if (this.#allowedUrls.size >= MAX_REMEMBERED) this.#allowedUrls.clear();
      this.#allowedUrls.set(key, ok);
    }
    return ok;
  }

  #report(
    group: GroupAddress,
    outcome: PushOutcome,
    seconds: number,
    message: ReceivedMessage,
    push: PushSettings,
    status: number | null,
  ): void {
    this.#d.observer.pushed(outcome, seconds);
    this.#d.observer.groupOutcome(group, outcome, this.#d.now());
    this.#d.outcomes.notePushOutcome(group, pushHealthOutcome(outcome), this.#d.now());
    const success = outcome === "success";
    // Successes log at debug, off in production: no fields (nor a URL parse) per push for it.
    if (success && !this.#d.log.isLevelEnabled("debug")) return;
    const fields = {
      topic: group.topic,
      group: group.group,
      messageId: message.messageId,
      deliveryCount: message.deliveryCount,
      // Origin and path only: a query string may carry a secret.
      destination: destination(push.url),
      outcome,
      status,
      ms: Math.round(seconds * 1000),
    };
    if (success) this.#d.log.debug(fields, "push");
    else this.#d.log.warn(fields, "push failed; the message will be retried");
  }
}

/** Push URLs whose allow-list answer is remembered; forgotten all at once when full. */
const MAX_REMEMBERED = 10_000;

/** Subjects by group: a push feed passes the same GroupAddress for every push of its group. */
const subjects = new WeakMap<GroupAddress, string>();

/** The JWT's `sub`: namespace, topic and group, each URI-encoded, joined by "/". */
function pushSubject(group: GroupAddress): string {
  let sub = subjects.get(group);
  if (sub === undefined) {
    const ns = group.namespace;
    sub = [ns.team, ns.project, ns.environment, ns.deployment ?? "", group.topic, group.group]
      .map(encodeURIComponent)
      .join("/");
    subjects.set(group, sub);
  }
  return sub;
}

function destination(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

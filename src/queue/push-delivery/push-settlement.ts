// How a pushed message's lease is settled besides an acknowledgement: released after a failed
// push or a timeout, whether the handler set the lease itself through the API (its word stands),
// giving the cursor's lease up to a lease taken by ID (a message above the inline limit, which
// the client leases by ID), freeing the cursor's place once that lease was acknowledged, and the
// `autoAck` after a 2xx.
import type { GroupCursor } from "../broker.js";
import type { IdLeaseLedger } from "../ledgers/id-lease-ledger.js";
import type { PushLedger } from "../ledgers/push-ledger.js";
import type { GroupAcks } from "../delivery/group-acks.js";
import type { GroupLeases } from "../delivery/group-leases.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import type { IdLeases } from "../id-leases.js";
import type { GroupAddress } from "../namespace.js";
import type { Lease } from "../identity/receipt-handle.js";

export type PushSettlementPorts = Pick<GroupCursor, "ack" | "groupEpoch">;

/** The receive path's rules a settlement applies (QueueContext's), so it acts as a receive does. */
export interface PushSettlementRules {
  readonly idLedger: Pick<IdLeaseLedger, "markIdLeases" | "putCursorLease" | "getIdLease">;
  readonly acks: Pick<GroupAcks, "acknowledge">;
  readonly idLeases: Pick<IdLeases, "releaseHeld">;
  readonly groupLeases: Pick<GroupLeases, "set">;
  /** Flow control: a released push gives its key's slot back while it waits for its retry. */
  readonly flow?: Pick<FlowGate, "leaseMoved">;
}

export class PushSettlement {
  readonly #broker: PushSettlementPorts;
  readonly #ledger: Pick<PushLedger, "handlerLease">;
  readonly #now: () => number;
  readonly #idLeases: Pick<IdLeases, "releaseHeld">;
  readonly #idLedger: PushSettlementRules["idLedger"];
  readonly #groupLeases: Pick<GroupLeases, "set">;
  readonly #acks: Pick<GroupAcks, "acknowledge">;
  readonly #flow: Pick<FlowGate, "leaseMoved"> | null;

  /** `rules`: the receive path's, so an `autoAck` or a release counts as theirs do. */
  constructor(
    broker: PushSettlementPorts,
    ledger: Pick<PushLedger, "handlerLease">,
    now: () => number,
    rules: PushSettlementRules,
  ) {
    this.#broker = broker;
    this.#ledger = ledger;
    this.#now = now;
    this.#acks = rules.acks;
    this.#idLeases = rules.idLeases;
    this.#idLedger = rules.idLedger;
    this.#groupLeases = rules.groupLeases;
    this.#flow = rules.flow ?? null;
  }

  /**
   * `autoAck` after a 2xx, whose outcome nobody is told: the cursor's ack goes without waiting
   * for the store's answer (the push's slot frees a round trip sooner). One lost on the way
   * brings the message back when its lease ends: a redelivery, as at-least-once allows, never a
   * loss. `epoch`: the group's epoch when the lease was handed out (a seek since makes it stale).
   */
  async acknowledge(group: GroupAddress, lease: Lease, epoch: number): Promise<void> {
    await this.#acks.acknowledge(group, lease, epoch, false);
  }

  /**
   * Releases a pushed message after a failed push: it comes back `seconds` later. A lease the
   * handler took by ID for it (a message above the inline limit) is released too. Its key's
   * slot (flow control) frees now: waiting for its retry, it is not in flight, and its
   * redelivery takes a slot again.
   */
  async release(group: GroupAddress, lease: Lease, seconds: number): Promise<void> {
    await this.#idLeases.releaseHeld(group, lease.streamSeq);
    await this.#groupLeases.set(group, lease, this.#now() + seconds * 1000);
    await this.#flow?.leaseMoved(group, lease.streamSeq, 0);
  }

  /**
   * After a push timed out: its handler may still be running and holds the lease it was given,
   * so the message comes back `seconds` from now or when that lease ends, whichever is later.
   * Neither its handle nor a lease it took by ID (above the inline limit) is cut: the handler
   * may still extend or settle through them.
   */
  async releaseTimedOut(group: GroupAddress, lease: Lease, seconds: number): Promise<void> {
    const backAtMs = this.#now() + seconds * 1000;
    if (backAtMs <= lease.deadlineMs) return; // the lease ends by itself, no sooner
    await this.#groupLeases.set(group, lease, backAtMs);
  }

  /** The group's epoch (bumped by a seek or the group's deletion), for `acknowledge`. */
  groupEpoch(group: GroupAddress): number {
    return this.#broker.groupEpoch(group);
  }

  /** Whether the handler of a pushed delivery set its lease through the API during the push. */
  async leaseSetByHandler(group: GroupAddress, lease: Lease): Promise<boolean> {
    return (await this.#ledger.handlerLease(group, lease.streamSeq)) === lease.deliveryCount;
  }

  /**
   * A message pushed without body and handle (above the inline limit): its handler leases it by
   * ID. The group's cursor keeps it pending (so it holds its place in the group's concurrency)
   * but records its own lease as over, so receive by ID may take it.
   */
  async yieldToReceiveById(group: GroupAddress, lease: Lease): Promise<void> {
    await this.#idLedger.markIdLeases(group);
    await this.#idLedger.putCursorLease(group, lease.streamSeq, {
      count: lease.deliveryCount,
      deadlineMs: this.#now() - 1,
      acked: false,
    });
  }

  /**
   * After a 2xx for a message pushed by ID: once acknowledged by ID it leaves the group's cursor
   * now (freeing its place) rather than when the cursor's lease ends.
   */
  async afterPushById(group: GroupAddress, lease: Lease): Promise<void> {
    const byId = await this.#idLedger.getIdLease(group, lease.streamSeq);
    if (byId?.state === "acked") {
      await this.#broker.ack(group, lease);
      await this.#flow?.leaseMoved(group, lease.streamSeq, 0);
    }
  }
}

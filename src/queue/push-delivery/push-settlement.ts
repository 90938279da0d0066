// What the pusher records about a pushed message's lease, beside handing it out and releasing it
// (QueueService): whether the handler set the lease itself through the API (its word stands),
// giving the cursor's lease up to a lease taken by ID (a message above the inline limit, which
// the client leases by ID), and freeing the cursor's place once that lease was acknowledged.
import type { GroupCursor, IdLeaseLedger, PushLedger } from "../broker.js";
import type { GroupAddress } from "../namespace.js";
import type { Lease } from "../receipt-handle.js";

export type PushSettlementPorts = Pick<PushLedger, "handlerLease"> &
  Pick<IdLeaseLedger, "markIdLeases" | "putCursorLease" | "getIdLease"> &
  Pick<GroupCursor, "ack" | "groupEpoch">;

export class PushSettlement {
  readonly #broker: PushSettlementPorts;
  readonly #now: () => number;

  constructor(broker: PushSettlementPorts, now: () => number) {
    this.#broker = broker;
    this.#now = now;
  }

  /** The group's epoch (bumped by a seek or the group's deletion), for `acknowledgeLease`. */
  groupEpoch(group: GroupAddress): number {
    return this.#broker.groupEpoch(group);
  }

  /** Whether the handler of a pushed delivery set its lease through the API during the push. */
  async leaseSetByHandler(group: GroupAddress, lease: Lease): Promise<boolean> {
    return (await this.#broker.handlerLease(group, lease.streamSeq)) === lease.deliveryCount;
  }

  /**
   * A message pushed without body and handle (above the inline limit): its handler leases it by
   * ID. The group's cursor keeps it pending (so it holds its place in the group's concurrency)
   * but records its own lease as over, so receive by ID may take it.
   */
  async yieldToReceiveById(group: GroupAddress, lease: Lease): Promise<void> {
    await this.#broker.markIdLeases(group);
    await this.#broker.putCursorLease(group, lease.streamSeq, {
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
    const byId = await this.#broker.getIdLease(group, lease.streamSeq);
    if (byId?.state === "acked") await this.#broker.ack(group, lease);
  }
}

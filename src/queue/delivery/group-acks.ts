// Acknowledging a delivery through its lease, and whether a handle is still current: shared by
// Leasing (an acknowledgement or change of visibility through the API) and PushSettlement
// (the pusher's `autoAck`), so both refuse a stale handle and count an acknowledgement the same way.
import { AppError } from "../../errors.js";
import type { CutLeaseLog, GroupCursor } from "../broker.js";
import type { LeaseLedger } from "../ledgers/lease-ledger.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import type { IdLeases } from "../id-leases.js";
import type { Lease } from "../identity/receipt-handle.js";
import type { GroupAddress } from "../namespace.js";
import type { QueueObserver } from "../observer.js";

/** Handles this close to their deadline are checked for staleness (clock skew, slow networks). */
const STALE_CHECK_MARGIN_MS = 1000;

export interface GroupAcksDeps {
  readonly broker: Pick<GroupCursor, "ack" | "ackUnconfirmed" | "groupEpoch">;
  readonly leases: Pick<LeaseLedger, "currentDelivery">;
  readonly cuts: Pick<CutLeaseLog, "wasCut">;
  readonly idLeases: Pick<IdLeases, "update" | "noteCursorChange">;
  readonly now: () => number;
  readonly observer: Pick<QueueObserver, "acknowledged">;
  /** Flow control: an acknowledged lease gives its key's slot back (and its place in order). */
  readonly flow?: Pick<FlowGate, "settled">;
}

export class GroupAcks {
  readonly #d: GroupAcksDeps;

  constructor(deps: GroupAcksDeps) {
    this.#d = deps;
  }

  /**
   * Acknowledges the delivery `lease` names. `epoch`: the group's epoch when the lease was handed
   * out, if known; a lease of an earlier epoch (a seek since) is stale, as its handle would be.
   * `confirmed: false` sends the cursor's ack without waiting for the store's answer (for an
   * outcome nobody is told).
   */
  async acknowledge(
    group: GroupAddress,
    lease: Lease,
    epoch: number | undefined,
    confirmed: boolean,
  ): Promise<void> {
    const broker = this.#d.broker;
    if (epoch !== undefined && epoch !== broker.groupEpoch(group)) {
      throw new AppError("receipt_handle_stale");
    }
    if (lease.kind === "id") {
      await this.#d.idLeases.update(group, lease, (l) => ({ ...l, state: "acked" }));
      // Settled: an ordered key whose head it was goes on.
      await this.#d.flow?.settled(group, lease.streamSeq);
    } else {
      await this.assertCurrent(group, lease);
      if (confirmed) await broker.ack(group, lease);
      else broker.ackUnconfirmed(group, lease);
      await this.#d.idLeases.noteCursorChange(group, lease, lease.deadlineMs, true);
      // The check above trusted a handle within its lease. If this gateway stalled past it
      // before the ack reached the store (a pause, a long GC), the message may have been handed
      // out again meanwhile, and the ack acted on that delivery: its key stays with it (settled
      // at its own ack or its lease's end), and the handle is answered stale. Still well within
      // its lease (the common case), the check above stands: nothing is looked up again.
      if (this.#d.now() >= lease.deadlineMs - STALE_CHECK_MARGIN_MS) {
        await this.assertCurrent(group, lease);
      }
      await this.#d.flow?.settled(group, lease.streamSeq);
    }
    this.#d.observer.acknowledged();
  }

  /**
   * A handle is current unless its message was delivered again. Within the handle's own lease no
   * redelivery can have happened, so only handles past their deadline (less a margin) consult
   * the record: the common acknowledgement needs no extra read, before it or after it.
   */
  async assertCurrent(group: GroupAddress, lease: Lease): Promise<void> {
    // Within its lease no other delivery can exist, unless the lease was cut short.
    const withinLease = this.#d.now() < lease.deadlineMs - STALE_CHECK_MARGIN_MS;
    if (withinLease && !this.#d.cuts.wasCut(group, lease)) return;
    const current = await this.#d.leases.currentDelivery(group, lease.streamSeq);
    if (current !== null && current !== lease.deliveryCount) {
      throw new AppError("receipt_handle_stale");
    }
  }
}

// A lease through its receipt handle: acknowledging the delivery, and changing its visibility
// (extended, or released with 0). A handle of another group, a forged one, or one handed out
// before the group's position was reset is refused before anything changes.
import { AppError } from "../../errors.js";
import { decodeReceiptHandle, type Lease } from "../identity/receipt-handle.js";
import type { GroupAddress } from "../namespace.js";
import type { QueueContext } from "./queue-context.js";

export class Leasing {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** Acknowledges the delivery the handle names (by ID or through the group's cursor). */
  async acknowledge(group: GroupAddress, receiptHandle: string): Promise<void> {
    const lease = this.#decodeHandle(group, receiptHandle);
    await this.#ctx.acks.acknowledge(group, lease, undefined, true);
  }

  /** Sets the lease to end `seconds` from now; returns the new deadline (now, for 0). */
  async changeVisibility(
    group: GroupAddress,
    receiptHandle: string,
    seconds: number,
  ): Promise<Date> {
    const lease = this.#decodeHandle(group, receiptHandle);
    const deadlineMs = this.#ctx.now() + seconds * 1000;
    if (lease.kind === "id") {
      await this.#ctx.idLeases.update(group, lease, (l) => {
        if (l.state === "acked") throw new AppError("message_already_acknowledged");
        return { ...l, state: seconds === 0 ? "released" : "leased", deadlineMs };
      });
    } else {
      await this.#ctx.acks.assertCurrent(group, lease);
      // A pushed message's handler set its lease: the pusher must not override it afterwards.
      if (this.#ctx.settingsOf(group)?.push) {
        await this.#ctx.pushLedger.noteHandlerLease(group, lease.streamSeq, lease.deliveryCount);
      }
      await this.#ctx.groupLeases.set(group, lease, deadlineMs);
    }
    return new Date(deadlineMs);
  }

  #decodeHandle(group: GroupAddress, receiptHandle: string): Lease {
    const epoch = this.#ctx.broker.groupEpoch(group);
    const lease = decodeReceiptHandle(this.#ctx.keys.receiptHandle, group, receiptHandle, epoch);
    if (lease === null) throw new AppError("invalid_receipt_handle");
    // Handed out before the group's position was reset (seek) or the group deleted.
    if (lease === "stale") throw new AppError("receipt_handle_stale");
    return lease;
  }
}

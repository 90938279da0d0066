// Setting a group cursor's lease through a handle (a receive's change of visibility, the pusher's
// release after a failed push): shared by Leasing and PushSettlement, so both cut a lease
// short the same way.
import { AppError } from "../../errors.js";
import type { CutLeaseLog, GroupCursor } from "../broker.js";
import type { FlowGate } from "../flow-control/flow-gate.js";
import type { IdLeases } from "../id-leases.js";
import type { Lease } from "../identity/receipt-handle.js";
import type { GroupAddress } from "../namespace.js";

export class GroupLeases {
  readonly #broker: Pick<GroupCursor, "setLease">;
  readonly #cuts: Pick<CutLeaseLog, "markCut">;
  readonly #idLeases: Pick<IdLeases, "noteCursorChange">;
  readonly #now: () => number;
  readonly #flow: Pick<FlowGate, "leaseMoved" | "extend"> | null;

  /** `flow`: the receive path's, so a lease's flow-control slot follows its changes. */
  constructor(
    broker: Pick<GroupCursor, "setLease">,
    cuts: Pick<CutLeaseLog, "markCut">,
    idLeases: Pick<IdLeases, "noteCursorChange">,
    now: () => number,
    flow: Pick<FlowGate, "leaseMoved" | "extend"> | null = null,
  ) {
    this.#broker = broker;
    this.#cuts = cuts;
    this.#idLeases = idLeases;
    this.#now = now;
    this.#flow = flow;
  }

  /** The lease of `lease`'s delivery ends at `deadlineMs` (now or earlier: it comes back now). */
  async set(group: GroupAddress, lease: Lease, deadlineMs: number): Promise<void> {
    // Flow control: a lease that lasts on keeps its key's slot; one whose slot ran out and whose
    // key has no room now ended (another message of the key is in flight): refused.
    const extended = deadlineMs > this.#now();
    if (extended && this.#flow && !(await this.#flow.extend(group, lease, deadlineMs))) {
      throw new AppError("receipt_handle_stale");
    }
    // Ending before the handle's deadline: the message may come back while the handle still
    // looks current, so from now on the handle is checked like one past its deadline.
    if (deadlineMs < lease.deadlineMs) {
      await this.#cuts.markCut(group, lease, lease.deadlineMs);
    }
    await this.#broker.setLease(group, lease, Math.max(0, deadlineMs - this.#now()));
    await this.#idLeases.noteCursorChange(group, lease, deadlineMs, false);
    if (!extended) await this.#flow?.leaseMoved(group, lease.streamSeq, deadlineMs);
  }
}

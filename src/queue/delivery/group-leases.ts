// Setting a group cursor's lease through a handle (a receive's change of visibility, the pusher's
// release after a failed push): shared by Leasing and PushSettlement, so both cut a lease
// short the same way.
import type { CutLeaseLog, GroupCursor } from "../broker.js";
import type { IdLeases } from "../id-leases.js";
import type { Lease } from "../identity/receipt-handle.js";
import type { GroupAddress } from "../namespace.js";

export class GroupLeases {
  readonly #broker: Pick<GroupCursor, "setLease">;
  readonly #cuts: Pick<CutLeaseLog, "markCut">;
  readonly #idLeases: Pick<IdLeases, "noteCursorChange">;
  readonly #now: () => number;

  constructor(
    broker: Pick<GroupCursor, "setLease">,
    cuts: Pick<CutLeaseLog, "markCut">,
    idLeases: Pick<IdLeases, "noteCursorChange">,
    now: () => number,
  ) {
    this.#broker = broker;
    this.#cuts = cuts;
    this.#idLeases = idLeases;
    this.#now = now;
  }

  /** The lease of `lease`'s delivery ends at `deadlineMs` (now or earlier: it comes back now). */
  async set(group: GroupAddress, lease: Lease, deadlineMs: number): Promise<void> {
    // Ending before the handle's deadline: the message may come back while the handle still
    // looks current, so from now on the handle is checked like one past its deadline.
    if (deadlineMs < lease.deadlineMs) {
      await this.#cuts.markCut(group, lease, lease.deadlineMs);
    }
    await this.#broker.setLease(group, lease, Math.max(0, deadlineMs - this.#now()));
    await this.#idLeases.noteCursorChange(group, lease, deadlineMs, false);
  }
}

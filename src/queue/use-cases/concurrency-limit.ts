// A receive of a group at its concurrency limit (Vqs-Max-Concurrency): which delivery, if any,
// may still be handed out without putting more in flight than the limit, and the bounces it
// records for the others (released unseen, never counted as in flight).
import type { Delivery, GroupCursor } from "../broker.js";
import type { LeaseLedger } from "../ledgers/lease-ledger.js";
import { MAX_PULLS_AT_LIMIT } from "../limits.js";
import type { GroupAddress } from "../namespace.js";

export interface ConcurrencyLimitPorts {
  readonly cursor: Pick<GroupCursor, "pull" | "setLease">;
  readonly leases: Pick<LeaseLedger, "noteLimitBounce" | "lastLimitBounce">;
}

/**
 * At the limit by JetStream's count, which includes messages that are not in flight: those
 * whose lease ran out and those released unseen here earlier ("bounces"), until they are
 * delivered again. JetStream hands those out before new messages, so this pulls one at a time
 * until the count without the redeliveries pulled is under the limit, one pulled is a message
 * whose own lease ran out (handing it out adds nothing in flight), a new message comes (no more
 * redeliveries are waiting), or nothing does: discounting only the one pulled would, with two
 * bounces waiting, bounce them in turn for ever. With room, the lowest sequence pulled is handed
 * out; every other one is released unseen and recorded as a bounce. `counted`: JetStream's
 * count; `first`: a delivery a waiting receive was woken with (counted already). Null: nothing
 * may be handed out.
 */
export async function pickAtLimit(
  broker: ConcurrencyLimitPorts,
  group: GroupAddress,
  counted: number,
  limit: number,
  first: Delivery | null,
): Promise<Delivery | null> {
  const held: Delivery[] = [];
  let notInFlight = 0;
  let ranOut: Delivery | null = null;
  let fresh = false;
  const look = async (d: Delivery, alreadyCounted: boolean) => {
    held.push(d);
    if (alreadyCounted || d.deliveryCount > 1) notInFlight++;
    if (d.deliveryCount <= 1) fresh = true;
    else if (counted - notInFlight >= limit && (await leaseRanOut(broker, group, d))) ranOut = d;
  };
  if (first) await look(first, true);
  while (
    counted - notInFlight >= limit &&
    ranOut === null &&
    !fresh &&
    held.length < Math.min(MAX_PULLS_AT_LIMIT, counted - limit + 1)
  ) {
    const d = (await broker.cursor.pull(group, 1))?.[0];
    if (d === undefined) break;
    await look(d, false);
  }
  held.sort((a, b) => a.streamSeq - b.streamSeq);
  const pick = counted - notInFlight < limit ? held[0] : (ranOut ?? undefined);
  for (const d of held) {
    if (d === pick) continue;
    // Recorded before the release: the message may come back at once, to any gateway.
    await broker.leases.noteLimitBounce(group, d.streamSeq, d.deliveryCount);
    await broker.cursor.setLease(group, d, 0);
  }
  return pick ?? null;
}

/**
 * Whether `d` is a redelivery whose earlier delivery was handed out (its lease ran out or was
 * released), so handing it out adds nothing in flight; not when that delivery was bounced at
 * the concurrency limit (it was never in flight).
 */
async function leaseRanOut(
  broker: ConcurrencyLimitPorts,
  group: GroupAddress,
  d: Delivery,
): Promise<boolean> {
  if (d.deliveryCount <= 1) return false;
  return (await broker.leases.lastLimitBounce(group, d.streamSeq)) !== d.deliveryCount - 1;
}

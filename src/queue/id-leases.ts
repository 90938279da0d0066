// Leases taken by message ID. JetStream cannot make a durable consumer deliver one chosen
// sequence, so these leases are the gateway's own (in the store's lease records), and the group's
// ordinary receive honours them: see docs/architecture.md, "Receive by ID".
import { randomInt } from "node:crypto";
import { AppError } from "../errors.js";
import { MAX_PULLS_AT_LIMIT } from "./limits.js";
import type { Delivery, GroupCursor } from "./broker.js";
import type { CursorLease, IdLease, IdLeaseLedger } from "./ledgers/id-lease-ledger.js";
import type { LeaseLedger } from "./ledgers/lease-ledger.js";
import type { GroupAddress } from "./namespace.js";

/** Which delivery is current, and bounces at the concurrency limit. */
type IdLeaseLeases = Pick<LeaseLedger, "recordDelivery" | "noteLimitBounce">;
import type { Lease } from "./identity/receipt-handle.js";

export class IdLeases {
  readonly #broker: GroupCursor;
  readonly #ledger: IdLeaseLedger;
  readonly #leases: IdLeaseLeases;
  readonly #now: () => number;

  constructor(
    broker: GroupCursor,
    ledger: IdLeaseLedger,
    leases: IdLeaseLeases,
    now: () => number,
  ) {
    this.#broker = broker;
    this.#ledger = ledger;
    this.#leases = leases;
    this.#now = now;
  }

  /**
   * Skips messages leased or acknowledged by ID; counts deliveries made by ID. Each delivery is
   * first recorded as the cursor's lease (until `deadlineMs`), then the ID lease is read: a
   * receive by ID writes its lease, then reads the cursor's record, so of two racing for one
   * message at least one sees the other.
   */
  async honour(
    group: GroupAddress,
    deliveries: Delivery[],
    deadlineMs: number,
  ): Promise<Delivery[]> {
    const kept = await Promise.all(deliveries.map((d) => this.#honourOne(group, d, deadlineMs)));
    return kept.filter((d): d is Delivery => d !== null);
  }

  async #honourOne(group: GroupAddress, d: Delivery, deadlineMs: number): Promise<Delivery | null> {
    await this.#ledger.putCursorLease(group, d.streamSeq, {
      count: d.deliveryCount,
      deadlineMs,
      acked: false,
    });
    for (let attempt = 0; attempt < 3; attempt++) {
      const idLease = await this.#ledger.getIdLease(group, d.streamSeq);
      if (idLease === null) return d;
      if (idLease.state === "acked") {
        await this.#broker.ack(group, d);
        return null;
      }
      const now = this.#now();
      if (idLease.state === "leased" && idLease.deadlineMs > now) {
        // Held by ID: hand it back until that lease ends. The server counted this as a delivery;
        // record the bounce so the delivery count given to consumers stays exact.
        const bumped = { ...idLease, bounces: idLease.bounces + 1 };
        if (
          (await this.#ledger.putIdLease(group, d.streamSeq, bumped, idLease.revision)) === null
        ) {
          continue;
        }
        await this.#broker.setLease(group, d, idLease.deadlineMs - now);
        return null;
      }
      if (idLease.state === "leased") {
        // The ID lease ran out and the group delivers the message now: its handle is stale.
        const released = { ...idLease, state: "released" as const };
        if (
          (await this.#ledger.putIdLease(group, d.streamSeq, released, idLease.revision)) === null
        ) {
          continue;
        }
      }
      return { ...d, deliveryCount: d.deliveryCount - idLease.bounces + idLease.count };
    }
    // Contended by receives by ID right now: try again a moment later.
    await this.#broker.setLease(group, d, 1000);
    return null;
  }

  /**
   * Records that a group delivery was acknowledged or its lease moved, so receive by ID answers
   * 410 or knows when the lease ends (groups that use receive by ID only; others pay the
   * cached mark).
   */
  async noteCursorChange(
    group: GroupAddress,
    lease: Lease,
    deadlineMs: number,
    acked: boolean,
  ): Promise<void> {
    if (!(await this.#ledger.usesIdLeases(group))) return;
    await this.#ledger.putCursorLease(group, lease.streamSeq, {
      count: lease.deliveryCount,
      deadlineMs,
      acked,
    });
  }

  /**
   * Ends a lease taken by ID on the message, if one is held (the pusher, after a failed push of
   * a message the handler leased by ID). Groups that never used receive by ID pay the cached mark.
   */
  async releaseHeld(group: GroupAddress, streamSeq: number): Promise<void> {
    if (!(await this.#ledger.usesIdLeases(group))) return;
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = await this.#ledger.getIdLease(group, streamSeq);
      if (held?.state !== "leased") return;
      const released = { ...held, state: "released" as const };
      if ((await this.#ledger.putIdLease(group, streamSeq, released, held.revision)) !== null) {
        return;
      }
    }
  }

  /** Changes the ID lease a handle names; 409 when the handle is no longer its lease's. */
  async update(
    group: GroupAddress,
    lease: Lease,
    change: (l: IdLease) => Omit<IdLease, "revision">,
  ): Promise<void> {
    for (;;) {
      const current = await this.#ledger.getIdLease(group, lease.streamSeq);
      if (current === null || current.leaseId !== lease.deliverySeq) {
        throw new AppError("receipt_handle_stale");
      }
      if (current.state === "released") throw new AppError("receipt_handle_stale");
      const next = change(current);
      if (current.state === "acked" && next.state === "acked") return; // acking twice is fine
      const revision = await this.#ledger.putIdLease(
        group,
        lease.streamSeq,
        next,
        current.revision,
      );
      if (revision !== null) return;
    }
  }

  /**
   * Leases one message by ID for the group. The lease lives in the gateway's records; the
   * group's cursor honours it (see honour). A message the group's cursor has handed out is
   * 410 once acknowledged, 409 while its lease runs, and can be taken once that lease ran out
   * (known from the cursor's record; 409 when the cursor handed it out before the group first
   * used receive by ID, so there is no record).
   */
  async take(
    group: GroupAddress,
    streamSeq: number,
    visibilityTimeoutSeconds: number,
    maxConcurrency: number | null,
  ): Promise<Lease> {
    await this.#ledger.markIdLeases(group);
    const existing = await this.#ledger.getIdLease(group, streamSeq);
    if (existing?.state === "acked") throw new AppError("message_already_acknowledged");
    if (existing?.state === "leased" && existing.deadlineMs > this.#now()) {
      throw new AppError("message_not_available");
    }
    const cursor = await this.#assertAvailable(group, streamSeq, maxConcurrency);
    const lease = {
      state: "leased" as const,
      deadlineMs: this.#now() + visibilityTimeoutSeconds * 1000,
      count: (existing?.count ?? 0) + 1,
      bounces: existing?.bounces ?? 0,
      leaseId: randomInt(1, 2 ** 47),
    };
    const revision = await this.#ledger.putIdLease(
      group,
      streamSeq,
      lease,
      existing?.revision ?? null,
    );
    if (revision === null) throw new AppError("message_not_available");
    // A receive may have handed it out (or acknowledged it) meanwhile: then that one wins.
    const now = await this.#ledger.getCursorLease(group, streamSeq);
    if (now !== null && (cursor === null || now.count !== cursor.count || now.acked)) {
      await this.#ledger.putIdLease(group, streamSeq, { ...lease, state: "released" }, revision);
      throw new AppError(now.acked ? "message_already_acknowledged" : "message_not_available");
    }
    // Deliveries by the cursor before (its count includes bounces) plus those by ID.
    const deliveryCount = Math.max(
      lease.count,
      (cursor?.count ?? 0) - (existing?.bounces ?? 0) + lease.count,
    );
    // The cursor's handle of the earlier delivery is stale now.
    if (cursor !== null) await this.#leases.recordDelivery(group, streamSeq, deliveryCount);
    return {
      kind: "id",
      streamSeq,
      deliverySeq: lease.leaseId,
      deliveryCount,
      deadlineMs: lease.deadlineMs,
    };
  }

  /** The cursor's record of the message when it handed it out and that lease ran out. */
  async #assertAvailable(
    group: GroupAddress,
    streamSeq: number,
    maxConcurrency: number | null,
  ): Promise<CursorLease | null> {
    const progress = await this.#broker.progress(group);
    if (progress === null) return null;
    if (streamSeq <= progress.ackFloorSeq) throw new AppError("message_already_acknowledged");
    let cursor: CursorLease | null = null;
    if (streamSeq <= progress.deliveredSeq) {
      cursor = await this.#ledger.getCursorLease(group, streamSeq);
      if (cursor?.acked) throw new AppError("message_already_acknowledged");
      if (cursor === null || cursor.deadlineMs > this.#now()) {
        throw new AppError("message_not_available");
      }
    }
    if (maxConcurrency !== null && progress.inFlight >= maxConcurrency) {
      // JetStream counts a message whose lease ran out as pending until it is delivered again,
      // so the count alone would refuse for ever a group whose in-flight leases all ran out.
      // The message asked for may be one: taking it adds nothing in flight. Else pulls of one
      // message, as at a receive's limit (JetStream hands out redeliveries first), each released
      // at once and recorded as a bounce: a redelivery was counted but is not in flight. They go
      // on while they bring redeliveries and the count without them is still at the limit
      // (stopping at the first would leave a group with two bounces pending refusing for ever).
      let notInFlight = cursor !== null ? 1 : 0;
      const most = Math.min(MAX_PULLS_AT_LIMIT, progress.inFlight - maxConcurrency + 1);
      for (let pulls = 0; pulls < most; pulls++) {
        if (progress.inFlight - notInFlight < maxConcurrency) break;
        const d = (await this.#broker.pull(group, 1))?.[0];
        if (d === undefined) break;
        // Recorded before the release: the message may come back at once, to any gateway.
        await this.#leases.noteLimitBounce(group, d.streamSeq, d.deliveryCount);
        await this.#broker.setLease(group, d, 0);
        if (d.streamSeq === streamSeq) {
          cursor = await this.#ledger.getCursorLease(group, streamSeq); // now that bounce
        } else if (d.deliveryCount > 1) {
          notInFlight++;
        }
        if (d.deliveryCount <= 1) break; // a new message: no redeliveries are waiting
      }
      if (progress.inFlight - notInFlight >= maxConcurrency) {
        throw new AppError("concurrency_limit_exceeded", { retryAfterSeconds: 1 });
      }
    }
    return cursor;
  }
}

// Receiving a group's messages: what a pull brings is handed out (expired ones skipped, leases
// taken by ID honoured, dead letters moved), within the group's concurrency limit, and with
// `waitSeconds` a receive that finds nothing waits on the group's shared feed (long-polls.ts).
import { AppError } from "../../errors.js";
import { tooManyWaiters } from "../admission/refusals.js";
import type { NamespaceCounts } from "../admission/in-flight/namespace-counts.js";
import type { Delivery, GroupStart } from "../broker.js";
import type { ReceivedMessage } from "../delivery/received-message.js";
import { KeyedLock } from "../keyed-lock.js";
import type { GroupAddress } from "../namespace.js";
import { pickAtLimit } from "./concurrency-limit.js";
import type { QueueContext } from "./queue-context.js";

export interface ReceiveOptions {
  readonly maxMessages: number;
  readonly visibilityTimeoutSeconds: number;
  readonly maxConcurrency: number | null;
  /** With nothing to hand out at once, wait up to this long for a message (long polling). */
  readonly waitSeconds?: number;
  /** Aborts when the client hangs up: a waiting receive ends, and nothing stays leased. */
  readonly signal?: AbortSignal;
  /**
   * Where the group starts if this receive's pull is what makes it (`Vqs-Cursor-Fallback`;
   * default earliest). An existing group is never moved. A waiting receive that found no topic
   * has the group made by its feed, at the oldest message: all of the topic came after it.
   */
  readonly cursorFallback?: GroupStart;
}

/** How many pulls one receive may make to skip expired messages before answering. */
const MAX_PULLS_PER_RECEIVE = 4;

export class Receiving {
  readonly #ctx: QueueContext;
  /** Waiting receives per namespace, capped. */
  readonly #waiters: NamespaceCounts;
  readonly #concurrencyTurns = new KeyedLock();

  constructor(ctx: QueueContext, waiters: NamespaceCounts) {
    this.#ctx = ctx;
    this.#waiters = waiters;
  }

  async receive(group: GroupAddress, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const waitMs = (options.waitSeconds ?? 0) * 1000;
    const spare = this.#ctx.longPolls.takeSpare(group);
    // A group this gateway follows for waiting receives has its feed pulling already: a waiting
    // receive joins it without a pull of its own, so clients that all come back at the end of
    // their waits cost a pull per group, not one each (the feed hands out what is there).
    // Deliveries held here over their key's limit (flow control) are looked at before waiting.
    if (
      waitMs === 0 ||
      spare !== null ||
      !this.#ctx.longPolls.following(group) ||
      this.#ctx.flow.holds(group)
    ) {
      const now = await this.#receiveNow(group, options, spare);
      if (now.length > 0) return now;
      // A waiter of this gateway that hung up a moment ago may have left its feed's pull open at
      // the server, older than this receive's: a message published meanwhile went to it, and is
      // kept here as a spare. Its delivery came in before this pull's empty answer (one
      // connection, in order), so it is here now.
      const late = spare === null ? this.#ctx.longPolls.takeSpare(group) : null;
      const got = late ? await this.#receiveNow(group, options, late) : now;
      if (got.length > 0 || waitMs === 0) return got;
    }
    // Long polling: wait for a delivery (one shared feed per group on this gateway), then hand
    // it out like the first message of a pull; one that may not be handed out (expired, held by
    // ID, dead-lettered, over the concurrency limit) means waiting on. A namespace with as many
    // waiters here as it may have is told so (nothing was leased by the look above).
    const ns = group.namespace.key;
    if (!this.#waiters.take(ns)) throw tooManyWaiters();
    try {
      const untilMs = this.#ctx.now() + waitMs;
      for (;;) {
        const d = await this.#ctx.longPolls.wait(group, untilMs, options.signal ?? null);
        if (d === null) return [];
        const got = await this.#receiveNow(group, options, d);
        if (got.length > 0) return got;
      }
    } finally {
      this.#waiters.release(ns);
    }
  }

  /** Answers every waiting receive of this gateway now (with nothing): it is shutting down. */
  stopWaiting(): void {
    this.#ctx.longPolls.close();
    // What is held over its key's limit goes back now (as holdbacks), not at its lease's end.
    void this.#ctx.flow.close();
  }

  /** Waiting receives on this gateway. */
  get waitingReceives(): number {
    return this.#ctx.longPolls.waiting;
  }

  /** A receive that does not wait; `first` is a delivery a waiting receive was woken with. */
  async #receiveNow(
    group: GroupAddress,
    options: ReceiveOptions,
    first: Delivery | null,
  ): Promise<ReceivedMessage[]> {
    if (options.maxConcurrency === null) {
      return this.#receive(group, options, options.maxMessages, undefined, first);
    }
    // The in-flight count is read, then the pull made: receives of one group with a limit take
    // turns on this gateway, so only receives racing through different gateways can overshoot.
    const release = await this.#concurrencyTurns.acquire(groupKey(group));
    try {
      const progress = await this.#ctx.broker.progress(group);
      // A delivery a waiting receive was woken with is already counted in flight.
      const inFlight = (progress?.inFlight ?? 0) - (first ? 1 : 0);
      if (inFlight >= options.maxConcurrency) {
        const d = await pickAtLimit(
          { cursor: this.#ctx.broker, leases: this.#ctx.leaseLedger },
          group,
          progress?.inFlight ?? 0,
          options.maxConcurrency,
          first,
        );
        if (d === null) {
          if (first) return []; // others took the group to its limit while this receive waited
          throw new AppError("concurrency_limit_exceeded", { retryAfterSeconds: 1 });
        }
        return await this.#receive(group, options, 1, release, d, 1);
      }
      return await this.#receive(
        group,
        options,
        Math.min(options.maxMessages, options.maxConcurrency - inFlight),
        release,
        first,
      );
    } finally {
      release();
    }
  }

  /** `pulled` is told once the pulls are done (the turn of a limited receive ends there). */
  async #receive(
    group: GroupAddress,
    options: ReceiveOptions,
    want: number,
    pulled: () => void = () => undefined,
    first: Delivery | null = null,
    maxPulls = MAX_PULLS_PER_RECEIVE,
  ): Promise<ReceivedMessage[]> {
    const leaseMs = options.visibilityTimeoutSeconds * 1000;
    // Taken before the pull: the server's lease starts later, so a handle never claims more time
    // than the server gives (the stale-handle check relies on it).
    const deadlineMs = this.#ctx.now() + leaseMs;
    const taken: Delivery[] = [];
    const live: Delivery[] = [];
    const flow = this.#ctx.flow;
    const keyed = flow.flowOf(group) !== null;
    try {
      // Held here over their key's limit: those whose key has a slot now go first (oldest).
      if (keyed) live.push(...(await flow.takeHeld(group, want, deadlineMs, leaseMs)));
      for (let pulls = 0; pulls < maxPulls && live.length < want; pulls++) {
        const asked = want - live.length;
        const pulledNow = first
          ? [first]
          : await this.#ctx.broker.pull(group, asked, options.cursorFallback);
        const woken = first !== null;
        first = null;
        if (pulledNow === null || pulledNow.length === 0) break;
        const batch = keyed ? await flow.seenCounts(group, pulledNow) : pulledNow;
        taken.push(...batch);
        const admitted = await this.#ctx.handOut.admit(group, batch, deadlineMs);
        if (keyed) {
          const { pass, held } = await flow.admit(group, admitted, deadlineMs);
          const waiting = new Set(held); // the waitlist has them now
          taken.splice(0, taken.length, ...taken.filter((d) => !waiting.has(d)));
          live.push(...pass);
        } else live.push(...admitted);
        if (!woken && batch.length < asked) break; // the group has nothing more right now
      }
      pulled();
      await this.#ctx.handOut.lease(group, live, leaseMs);
    } catch (err) {
      // Nothing reaches the caller: release what was pulled rather than leave it leased to nobody.
      await this.#releaseAll(group, [...new Set([...taken, ...live])]);
      throw err;
    }
    if (options.signal?.aborted) {
      // The client hung up while this receive waited or pulled: nothing stays leased to it.
      await this.#releaseAll(group, live);
      return [];
    }
    return live.map((d) => this.#ctx.handOut.handOut(group, d, deadlineMs));
  }

  /** Released at once, each one's flow-control slot given back. */
  async #releaseAll(group: GroupAddress, ds: readonly Delivery[]): Promise<void> {
    await Promise.allSettled(
      ds.map(async (d) => {
        await this.#ctx.broker.setLease(group, d, 0);
        await this.#ctx.flow.leaseMoved(group, d.streamSeq, 0);
      }),
    );
  }
}

function groupKey(group: GroupAddress): string {
  return JSON.stringify([group.namespace.key, group.topic, group.group]);
}

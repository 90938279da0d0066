// Timer moves per second per namespace on one gateway: a namespace whose timers come due faster
// than its budget has the rest put back (a `-NAK` with a delay) each to its own later slot, one
// slot per 1/budget second, so a million timers due in one second are moved at the budget's
// pace, late only for that namespace, and its shard-mates' timers (same consumer, same pulls) go
// through between them. A timer put back here passes when it comes back (its slot was counted
// when it was put back): each is put back once, not again and again.

/** Namespaces whose clocks are kept at most (all are forgotten past it: a burst of names). */
const MAX_NAMESPACES = 100_000;
/** Timers put back and not yet come back, kept at most (forgotten past it: moved late, twice). */
const MAX_PUT_BACK = 1_000_000;

export class MoveBudget {
  readonly #intervalMs: number;
  readonly #now: () => number;
  /** Per namespace: when its next move may be (the slots before it are taken). */
  #next = new Map<string, number>();
  /** Timers (stream sequence) put back until their slot. */
  #putBack = new Set<number>();

  /** `perSecond` 0: no budget. */
  constructor(perSecond: number, now: () => number = Date.now) {
    this.#intervalMs = perSecond > 0 ? 1000 / perSecond : 0;
    this.#now = now;
  }

  /**
   * 0 when the namespace's timer (`timerSeq`: its sequence in the timer stream) may be moved
   * now, else how long to put it back for. A second's worth of moves may go at once (a burst
   * within the budget is not spread).
   */
  delayMs(namespace: string, timerSeq: number): number {
    if (this.#intervalMs === 0) return 0;
    if (this.#putBack.delete(timerSeq)) return 0;
    const now = this.#now();
    if (this.#next.size > MAX_NAMESPACES) this.#next = new Map();
    const slot = Math.max(now - 1000, this.#next.get(namespace) ?? 0);
    this.#next.set(namespace, slot + this.#intervalMs);
    if (slot <= now) return 0;
    if (this.#putBack.size >= MAX_PUT_BACK) this.#putBack = new Set();
    this.#putBack.add(timerSeq);
    return Math.ceil(slot - now);
  }
}

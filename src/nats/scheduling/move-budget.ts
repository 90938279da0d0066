// Timer moves per second per namespace on one gateway: a namespace whose timers come due faster
// than its budget has the rest put back (a `-NAK` with a delay) each to its own later slot, one
// slot per 1/budget second, so a million timers due in one second are moved at the budget's
// pace, late only for that namespace, and its shard-mates' timers (same consumer, same pulls) go
// through between them. A timer put back here passes when it comes back (its slot was counted
// when it was put back): each is put back once, not again and again.
//
// The budget follows what the gateway's timer loops can move: a namespace gets at most half of
// the moves per second the loops were measured to manage (batches that kept them busy), and never
// more than the configured budget. A fixed budget above the loops' throughput never acted (the
// loop moved fewer a second than one namespace asked), so a shard-mate queued behind the flood.

/** Namespaces whose clocks are kept at most (all are forgotten past it: a burst of names). */
const MAX_NAMESPACES = 100_000;
/** Timers put back and not yet come back, kept at most (forgotten past it: moved late, twice). */
const MAX_PUT_BACK = 1_000_000;
/** One namespace's part of the measured throughput: the rest is left for its shard-mates. */
const SHARE = 0.5;
/** Moves that may go at once, in time at the budget's pace: a burst never holds a loop long. */
const BURST_MS = 200;
/** A batch with fewer moves than this says more about latency than throughput: not measured. */
const MIN_SAMPLE_MOVES = 16;
/** Weight of a new throughput sample (moving average). */
const SAMPLE_WEIGHT = 0.2;
/** The least budget, whatever was measured: its burst (20) still gives batches to measure. */
const MIN_PER_SECOND = 100;

export class MoveBudget {
  readonly #perSecond: number;
  readonly #now: () => number;
  /** Moves per second of busy loop time, a moving average; 0 until measured. */
  #throughput = 0;
  /** Per namespace: when its next move may be (the slots before it are taken). */
  #next = new Map<string, number>();
  /** Timers (stream sequence) put back until their slot. */
  #putBack = new Set<number>();

  /** `perSecond`: the most per namespace (0: no budget at all, measured or not). */
  constructor(perSecond: number, now: () => number = Date.now) {
    this.#perSecond = perSecond;
    this.#now = now;
  }

  /** A batch the loop handled: `moves` timers moved in `busyMs` from its first message on. */
  measured(moves: number, busyMs: number): void {
    if (moves < MIN_SAMPLE_MOVES || busyMs <= 0) return;
    const sample = (moves * 1000) / busyMs;
    this.#throughput =
      this.#throughput === 0
        ? sample
        : this.#throughput + SAMPLE_WEIGHT * (sample - this.#throughput);
  }

  /** Moves per second one namespace may have now (0: no budget). */
  get perSecond(): number {
    if (this.#perSecond === 0) return 0;
    if (this.#throughput === 0) return this.#perSecond;
    return Math.min(this.#perSecond, Math.max(MIN_PER_SECOND, this.#throughput * SHARE));
  }

  /**
   * 0 when the namespace's timer (`timerSeq`: its sequence in the timer stream) may be moved
   * now, else how long to put it back for. BURST_MS' worth of moves may go at once (a small
   * burst within the budget is not spread).
   */
  delayMs(namespace: string, timerSeq: number): number {
    const perSecond = this.perSecond;
    if (perSecond === 0) return 0;
    if (this.#putBack.delete(timerSeq)) return 0;
    const intervalMs = 1000 / perSecond;
    const now = this.#now();
    if (this.#next.size > MAX_NAMESPACES) this.#next = new Map();
    const slot = Math.max(now - BURST_MS, this.#next.get(namespace) ?? 0);
    this.#next.set(namespace, slot + intervalMs);
    if (slot <= now) return 0;
    if (this.#putBack.size >= MAX_PUT_BACK) this.#putBack = new Set();
    this.#putBack.add(timerSeq);
    return Math.ceil(slot - now);
  }
}

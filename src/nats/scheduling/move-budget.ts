// Timer moves per second per namespace on one gateway: a namespace whose timers come due faster
// than its budget has the rest put back (a `-NAK` with a delay spread over the seconds its excess
// takes), so a million timers due in one second are moved at the budget's pace, late only for
// that namespace, and its shard-mates' timers (same consumer, same pulls) go through between them.

/** Namespaces counted in one second at most (the window starts again past it). */
const MAX_NAMESPACES = 100_000;

export class MoveBudget {
  readonly #perSecond: number;
  readonly #now: () => number;
  #second = 0;
  #used = new Map<string, number>();

  /** `perSecond` 0: no budget. */
  constructor(perSecond: number, now: () => number = Date.now) {
    this.#perSecond = perSecond;
    this.#now = now;
  }

  /**
   * 0 when the namespace's timer may be moved now (counted), else how long to put it back for:
   * to a later second, spread at random over as many seconds as the excess seen this second
   * would take at the budget's pace (so the timers put back come again about `perSecond` a
   * second, not all at once).
   */
  delayMs(namespace: string): number {
    if (this.#perSecond === 0) return 0;
    const now = this.#now();
    const second = Math.floor(now / 1000);
    if (second !== this.#second || this.#used.size > MAX_NAMESPACES) {
      this.#second = second;
      this.#used = new Map();
    }
    const used = (this.#used.get(namespace) ?? 0) + 1;
    this.#used.set(namespace, used);
    if (used <= this.#perSecond) return 0;
    const excessSeconds = (used - this.#perSecond) / this.#perSecond;
    return 1000 - (now % 1000) + Math.floor(Math.random() * Math.ceil(excessSeconds) * 1000);
  }
}

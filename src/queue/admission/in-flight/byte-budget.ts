// A gateway-wide budget of bytes held in memory at once by one kind of work (full-payload peek
// pages, inline parts held by batch publishes): a request takes its bytes before it reads them and
// gives them back when its answer is written, so N requests together cannot hold more than the
// budget, however many come at once. Its size is a share of the heap (src/http/heap-share.ts).

export class ByteBudget {
  #free: number;
  /** Waiters, oldest first: each is given its bytes when they are free (FIFO, none overtakes). */
  readonly #waiting: { bytes: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {
    this.#free = capacity;
  }

  get held(): number {
    return this.capacity - this.#free;
  }

  /** Takes `bytes` now if they are free (and nobody waits before); false: nothing taken. */
  tryTake(bytes: number): boolean {
    if (this.#waiting.length > 0 || bytes > this.#free) return false;
    this.#free -= bytes;
    return true;
  }

  /**
   * Takes `bytes`, waiting up to `waitMs` for them to be freed; false: not taken in time (nothing
   * is held then). More than the whole capacity is never given.
   */
  async take(bytes: number, waitMs: number): Promise<boolean> {
    if (this.tryTake(bytes)) return true;
    if (bytes > this.capacity || waitMs <= 0) return false;
    return new Promise<boolean>((resolve) => {
      const waiter = {
        bytes,
        grant: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        resolve(false);
        this.#grant(); // the next one may fit now that this one left the line
      }, waitMs);
      timer.unref();
      this.#waiting.push(waiter);
    });
  }

  release(bytes: number): void {
    this.#free = Math.min(this.capacity, this.#free + bytes);
    this.#grant();
  }

  #grant(): void {
    for (let w = this.#waiting[0]; w && w.bytes <= this.#free; w = this.#waiting[0]) {
      this.#waiting.shift();
      this.#free -= w.bytes;
      w.grant();
    }
  }
}

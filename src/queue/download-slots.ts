// The large-body downloads one gateway streams at once (VQS_MAX_LARGE_DOWNLOADS): each holds a
// read window of chunks, so their number bounds the memory they take. A download takes a slot
// before its first chunk is read and gives it back when it ends, however it ends. Receive by ID
// asks for one before it leases anything and is refused without one (`tryTake`); a receive
// whose messages are already leased waits for one in turn (`take`), holding no chunk meanwhile.

/** A download's place among those the gateway streams at once. */
export interface DownloadSlot {
  /** Gives the place back (to the next download waiting); a second call does nothing. */
  release(): void;
}

interface Waiter {
  readonly grant: (slot: DownloadSlot | null) => void;
}

export class DownloadSlots {
  readonly #max: number;
  readonly #onChange: () => void;
  #used = 0;
  /** Downloads waiting for a slot, oldest first. */
  readonly #waiting: Waiter[] = [];

  /** `onChange` hears of every change of `used` or `waiting`. */
  constructor(max: number, onChange: () => void = () => undefined) {
    this.#max = max;
    this.#onChange = onChange;
  }

  /** Slots held now. */
  get used(): number {
    return this.#used;
  }

  /** Downloads waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** A slot now, or null when none is free or downloads wait for one (they come first). */
  tryTake(): DownloadSlot | null {
    if (this.#used >= this.#max || this.#waiting.length > 0) return null;
    return this.#grant();
  }

  /**
   * A slot as soon as one is free, in turn. Null when `waitMs` pass first or `signal` aborts:
   * the waiter has then left the queue.
   */
  take(waitMs: number, signal: AbortSignal | null): Promise<DownloadSlot | null> {
    const now = this.tryTake();
    if (now) return Promise.resolve(now);
    if (signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const leave = (slot: DownloadSlot | null) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", gone);
        resolve(slot);
      };
      const waiter: Waiter = { grant: leave };
      const gone = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at < 0) return; // granted already
        this.#waiting.splice(at, 1);
        this.#onChange();
        leave(null);
      };
      const timer = setTimeout(gone, Math.max(0, waitMs));
      signal?.addEventListener("abort", gone, { once: true });
      this.#waiting.push(waiter);
      this.#onChange();
    });
  }

  #grant(): DownloadSlot {
    this.#used++;
    this.#onChange();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#used--;
        const next = this.#waiting.shift();
        if (next) next.grant(this.#grant());
        else this.#onChange();
      },
    };
  }
}

// The large-body downloads one gateway streams at once (VQS_MAX_LARGE_DOWNLOADS): each holds a
// read window of chunks, so their number bounds the memory they take. A download takes a slot
// before its first chunk is read and gives it back when it ends, however it ends. Receive by ID
// asks for one before it leases anything and waits a little for it (`take`), or is refused; a
// receive whose messages are already leased waits for one in turn (`take`, urgent: their leases
// are running), holding no chunk meanwhile.

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
  /** Downloads of leased messages waiting for a slot, oldest first: served first. */
  readonly #urgent: Waiter[] = [];
  /** Downloads not leased yet (receive by ID) waiting for a slot, oldest first. */
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
    return this.#urgent.length + this.#waiting.length;
  }

  /** A slot now, or null when none is free or downloads wait for one (they come first). */
  tryTake(): DownloadSlot | null {
    if (this.#used >= this.#max || this.waiting > 0) return null;
    return this.#grant();
  }

  /**
   * A slot as soon as one is free, in turn (`urgent` ones before the others). Null when `waitMs`
   * pass first or `signal` aborts: the waiter has then left the queue.
   */
  take(waitMs: number, signal: AbortSignal | null, urgent = false): Promise<DownloadSlot | null> {
    const now = this.tryTake();
    if (now) return Promise.resolve(now);
    if (signal?.aborted) return Promise.resolve(null);
    const queue = urgent ? this.#urgent : this.#waiting;
    return new Promise((resolve) => {
      const leave = (slot: DownloadSlot | null) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", gone);
        resolve(slot);
      };
      const waiter: Waiter = { grant: leave };
      const gone = () => {
        const at = queue.indexOf(waiter);
        if (at < 0) return; // granted already
        queue.splice(at, 1);
        this.#onChange();
        leave(null);
      };
      const timer = setTimeout(gone, Math.max(0, waitMs));
      signal?.addEventListener("abort", gone, { once: true });
      queue.push(waiter);
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
        const next = this.#urgent.shift() ?? this.#waiting.shift();
        if (next) next.grant(this.#grant());
        else this.#onChange();
      },
    };
  }
}

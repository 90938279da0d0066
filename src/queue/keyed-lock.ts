// One holder at a time per key, in arrival order; entries disappear when nobody waits.
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  /** Resolves when the caller holds the key; call the returned function to let the next in. */
  async acquire(key: string): Promise<() => void> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    return () => {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }
}

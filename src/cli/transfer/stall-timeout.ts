// A timeout for a streamed transfer: it fires when no byte moved for `ms`, however long the
// whole transfer takes, so a 100 MB body over a slow link is not cut off at a fixed deadline
// while a stalled one still ends.

export class StallTimeout {
  readonly #controller = new AbortController();
  readonly ms: number;
  #timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.ms = ms;
    this.#timer = this.#arm();
  }

  /** Aborts with a TimeoutError once nothing moved for the time given. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Bytes moved: the time starts again. */
  touch(): void {
    clearTimeout(this.#timer);
    this.#timer = this.#arm();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }

  #arm(): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.#controller.abort(
        new DOMException(`nothing moved for ${this.ms / 1000} s`, "TimeoutError"),
      );
    }, this.ms);
    t.unref();
    return t;
  }
}

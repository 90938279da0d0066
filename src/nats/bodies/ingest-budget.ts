// The byte-rate budget of large-body ingest on one gateway (largeIngestBytesPerSecond):
// a token bucket shared by every upload. An upload that finds it empty waits, which stops it
// reading its request (TCP pushes back on the client), so small messages keep the gateway's
// CPU and NATS's attention.
export class IngestBudget {
  readonly #rate: number;
  /** At most a second's worth may be taken at once. */
  readonly #burst: number;
  #tokens: number;
  #at = performance.now();

  /** `bytesPerSecond` 0: no budget. */
  constructor(bytesPerSecond: number) {
    this.#rate = bytesPerSecond;
    this.#burst = bytesPerSecond;
    this.#tokens = bytesPerSecond;
  }

  /** Resolves once `n` bytes may go in. */
  async take(n: number): Promise<void> {
    if (this.#rate <= 0) return;
    for (;;) {
      const now = performance.now();
      this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#at) / 1000) * this.#rate);
      this.#at = now;
      if (this.#tokens >= Math.min(n, this.#burst)) {
        this.#tokens -= n;
        return;
      }
      const waitMs = ((Math.min(n, this.#burst) - this.#tokens) / this.#rate) * 1000;
      await new Promise((r) => setTimeout(r, Math.max(1, Math.ceil(waitMs))));
    }
  }
}

// Latency samples and their percentiles, and the outcome of one measured run.

export class Recorder {
  /** Latencies (ms) of the operations completed inside the measuring window. */
  readonly samples: number[] = [];
  /** Messages counted inside the window (a receive of 10 counts 10). */
  messages = 0;
  operations = 0;
  errors = 0;
  readonly errorKinds = new Map<string, number>();
  /** Cap on kept samples, so a long run cannot grow memory without bound. */
  readonly #maxSamples: number;

  constructor(maxSamples = 2_000_000) {
    this.#maxSamples = maxSamples;
  }

  record(latencyMs: number, messages = 1): void {
    this.operations++;
    this.messages += messages;
    if (this.samples.length < this.#maxSamples) this.samples.push(latencyMs);
  }

  error(kind: string): void {
    this.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }
}

export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function percentiles(samples: readonly number[]): Percentiles {
  if (samples.length === 0) return { p50: NaN, p99: NaN, max: NaN };
  const s = Float64Array.from(samples).sort();
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? NaN };
}

/** The median of the finite values (the mean of the middle two for an even count), or NaN. */
export function median(xs: readonly number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function round(n: number, digits = 2): number {
  if (!Number.isFinite(n)) return n;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

// A one-line progress bar for a terminal (stderr): `[#####-----] 40/100 40%  12/s  ETA 5s`,
// redrawn in place with \r. A few lines of our own rather than a library: one bar, updated
// once per round, needs no multi-bar layout, templates or string-width tables
// (docs/architecture.md, "Dependencies"). Only on a terminal; elsewhere commands print a final line.
import type { OutStream, Paint } from "./output.js";

export class ProgressBar {
  readonly #stream: OutStream;
  readonly #paint: Paint;
  readonly #now: () => number;
  readonly #start: number;
  #drawn = false;

  constructor(stream: OutStream, paint: Paint, now: () => number = Date.now) {
    this.#stream = stream;
    this.#paint = paint;
    this.#now = now;
    this.#start = now();
  }

  /** Draws `done` of `total` (total 0: nothing to do, shown as full). */
  update(done: number, total: number, label = ""): void {
    this.#stream.write(`\r${this.line(done, total, label)}\x1b[K`);
    this.#drawn = true;
  }

  /** Ends the bar's line, so what follows starts on a fresh one. */
  finish(): void {
    if (this.#drawn) this.#stream.write("\n");
    this.#drawn = false;
  }

  /** The bar's text (exported for tests): fits the terminal's width. */
  line(done: number, total: number, label = ""): string {
    const fraction = total <= 0 ? 1 : Math.min(1, done / total);
    const seconds = (this.#now() - this.#start) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const eta = rate > 0 && done < total ? formatDuration((total - done) / rate) : "";
    const stats = [
      `${done}/${total}`,
      `${Math.floor(fraction * 100)}%`,
      rate > 0 ? `${rate >= 10 ? Math.round(rate) : rate.toFixed(1)}/s` : "",
      eta ? `ETA ${eta}` : "",
      label,
    ]
      .filter((s) => s !== "")
      .join("  ");
    const columns = this.#stream.columns || 80;
    const width = Math.max(10, Math.min(40, columns - stats.length - 4));
    const filled = Math.round(fraction * width);
    const paint = (colour: "green" | "dim", text: string) =>
      text ? this.#paint(colour, text) : "";
    const bar = paint("green", "#".repeat(filled)) + paint("dim", "-".repeat(width - filled));
    return `[${bar}] ${stats}`;
  }
}

/** 45s, 3m05s, 2h10m. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

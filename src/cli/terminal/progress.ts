// The progress bar of `dlq redrive` and `publish --count` (`[#####-----] 40/100  40%  12/s  ETA
// 5s`) and of a large file published or received (`... 40.0 MiB/100.0 MiB  40%  12.5 MiB/s ...`),
// drawn by cli-progress on stderr and only on a terminal. cli-progress redraws in place at
// most 10 times a second, however often the count changes. Elsewhere there is no bar (commands
// print a final line), so logs and pipes never see carriage returns.
import { SingleBar, type Options, type Params } from "cli-progress";
import { formatBytes, formatDuration, type OutStream, type Paint } from "../output.js";

/** What the bar counts: messages (plain numbers) or bytes (KiB, MiB, ...). */
export type ProgressUnit = "count" | "bytes";

export interface Progress {
  /** `done` of `total` (total 0: nothing to do, shown as full); `label` after the figures. */
  update(done: number, total: number, label?: string): void;
  /** Draws the last state and ends the bar's line, so what follows starts on a fresh one. */
  stop(): void;
}

/** A bar on `stream` when it is a terminal (and TERM is not "dumb"), else null. */
export function progressBar(
  stream: OutStream,
  env: NodeJS.ProcessEnv,
  paint: Paint,
  now: () => number = Date.now,
  unit: ProgressUnit = "count",
): Progress | null {
  if (stream.isTTY !== true || env.TERM === "dumb") return null;
  return new Bar(stream, paint, now, unit);
}

class Bar implements Progress {
  readonly #bar: SingleBar;
  readonly #now: () => number;
  readonly #start: number;
  #started = false;

  constructor(stream: OutStream, paint: Paint, now: () => number, unit: ProgressUnit) {
    this.#now = now;
    this.#start = now();
    const options: Options = {
      // What cli-progress needs of a stream (isTTY, write; readline's cursor calls only write).
      // Its own cut to `columns` would count colour codes as characters: our line fits the
      // terminal already, so it is told the line may be as long as it is.
      stream: { isTTY: true, columns: 10_000, write: (s: string) => stream.write(s) } as never,
      format: (_o, params, payload: { label?: string }) =>
        progressLine(params, {
          columns: stream.columns || 80,
          paint,
          seconds: (this.#now() - this.#start) / 1000,
          label: payload.label ?? "",
          unit,
        }),
      fps: 10,
      // Leave the terminal as it was, even when a second Ctrl-C ends the process mid-bar:
      // no hidden cursor, no line-wrapping switched off, no SIGINT handler of its own.
      hideCursor: false,
      linewrap: true,
      gracefulExit: false,
      clearOnComplete: false,
    };
    this.#bar = new SingleBar(options);
  }

  update(done: number, total: number, label = ""): void {
    if (!this.#started) {
      this.#started = true;
      this.#bar.start(total, done, { label });
      return;
    }
    this.#bar.setTotal(total);
    this.#bar.update(done, { label });
  }

  stop(): void {
    if (this.#started) this.#bar.stop();
  }
}

/**
 * The bar's text (exported for tests): `[bar] done/total  pct%  rate/s  ETA t  label`, the bar
 * 10 to 40 characters, as wide as the terminal leaves it.
 */
export function progressLine(
  params: Pick<Params, "value" | "total">,
  o: { columns: number; paint: Paint; seconds: number; label: string; unit?: ProgressUnit },
): string {
  const { value: done, total } = params;
  const fraction = total <= 0 ? 1 : Math.min(1, done / total);
  const rate = o.seconds > 0 ? done / o.seconds : 0;
  const eta = rate > 0 && done < total ? formatDuration((total - done) / rate) : "";
  const bytes = o.unit === "bytes";
  const amount = (n: number) => (bytes ? formatBytes(n) : String(n));
  const perSecond = bytes
    ? formatBytes(Math.round(rate))
    : rate >= 10
      ? String(Math.round(rate))
      : rate.toFixed(1);
  const stats = [
    `${amount(done)}/${amount(total)}`,
    `${Math.floor(fraction * 100)}%`,
    rate > 0 ? `${perSecond}/s` : "",
    eta ? `ETA ${eta}` : "",
    o.label,
  ]
    .filter((s) => s !== "")
    .join("  ");
  const width = Math.max(10, Math.min(40, o.columns - stats.length - 4));
  const filled = Math.round(fraction * width);
  const part = (colour: "green" | "dim", text: string) => (text ? o.paint(colour, text) : "");
  return `[${part("green", "#".repeat(filled))}${part("dim", "-".repeat(width - filled))}] ${stats}`;
}

// What commands print: tables (the default) or JSON (--json), colour only on a terminal, and
// errors in one shape. Streams and environment are passed in, so tests can run commands in
// process. Tables are a small formatter of our own (docs/architecture.md, "The vqs tool").
import type { FlowControlSettings } from "./api-client.js";
import type { Interrupts } from "./terminal/interrupts.js";

export interface OutStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  /** A terminal's width in characters (undefined when not a terminal). */
  readonly columns?: number;
}

export interface InStream extends AsyncIterable<Uint8Array | string> {
  readonly isTTY?: boolean;
}

/** The process as a command sees it. */
export interface Io {
  readonly stdout: OutStream;
  readonly stderr: OutStream;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Payloads and settings read from `-`, and answers to confirmations (main.ts: process.stdin). */
  readonly stdin?: InStream;
  /** Ctrl-C (main.ts: SIGINT); without it, commands are never interrupted. */
  readonly interrupts?: Interrupts;
}

export type Colour = "bold" | "dim" | "red" | "green" | "yellow" | "cyan" | "magenta";

const SGR: Record<Colour, [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  magenta: [35, 39],
  cyan: [36, 39],
};

/**
 * Colour on a terminal only: NO_COLOR (any value) turns it off, FORCE_COLOR (not "0") on, else
 * the stream must be a TTY and TERM not "dumb". `--color` / `--no-color` decide before both.
 */
export function colourEnabled(
  stream: OutStream,
  env: NodeJS.ProcessEnv,
  flag: boolean | undefined,
): boolean {
  if (flag !== undefined) return flag;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true && env.TERM !== "dumb";
}

export type Paint = (colour: Colour | undefined, text: string) => string;

export const noPaint: Paint = (_colour, text) => text;
export const ansiPaint: Paint = (colour, text) =>
  colour ? `\x1b[${SGR[colour][0]}m${text}\x1b[${SGR[colour][1]}m` : text;

export interface Column<R> {
  readonly header: string;
  readonly value: (row: R) => string;
  readonly colour?: (row: R) => Colour | undefined;
}

/** Printed width: code points, which is exact for the ASCII names and URLs tables mostly hold. */
function width(text: string): number {
  return [...text].length;
}

/**
 * Left-aligned columns two spaces apart, a header row, no borders (easy to read, to grep and to
 * cut). Cells are one line: line breaks become spaces. The last column is not padded.
 */
export function formatTable<R>(columns: readonly Column<R>[], rows: readonly R[], paint: Paint) {
  const cells = rows.map((r) => columns.map((c) => c.value(r).replace(/\s*[\r\n]+\s*/g, " ")));
  const widths = columns.map((c, i) =>
    Math.max(width(c.header), ...cells.map((row) => width(row[i] ?? ""))),
  );
  const line = (texts: string[], colours: (Colour | undefined)[]) =>
    texts
      .map((t, i) => {
        const padded = i === texts.length - 1 ? t : t + " ".repeat(widths[i]! - width(t));
        return paint(colours[i], padded);
      })
      .join("  ")
      .trimEnd();
  const out = [
    line(
      columns.map((c) => c.header),
      columns.map(() => "bold"),
    ),
  ];
  rows.forEach((r, n) =>
    out.push(
      line(
        cells[n]!,
        columns.map((c) => c.colour?.(r)),
      ),
    ),
  );
  return `${out.join("\n")}\n`;
}

/** A byte count for people: 512 B, 1.5 KiB, 2.0 MiB, 3.1 GiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/** A duration for people: 45s, 3m05s, 2h10m, 3d04h. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const two = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor((s % 86_400) / 3600))}h`;
}

/**
 * A group's flow control in one line, its key first: `tenant: concurrency 2, rate 10/60s (burst
 * 20), ordered`; "-" for none.
 */
export function formatFlowControl(fc: FlowControlSettings | null | undefined): string {
  if (!fc) return "-";
  const limits = [
    ...(fc.concurrency !== null ? [`concurrency ${fc.concurrency}`] : []),
    ...(fc.rate
      ? [`rate ${fc.rate.limit}/${fc.rate.periodSeconds}s (burst ${fc.rate.burst})`]
      : []),
    ...(fc.ordered ? ["ordered"] : []),
  ];
  return `${fc.key}: ${limits.join(", ")}`;
}

/** Output of one command run: --json or tables, colour decided per stream. */
export class Output {
  readonly json: boolean;
  readonly paint: Paint;
  readonly #io: Io;
  /** Colour for stderr (notes, progress), decided for that stream. */
  readonly paintErr: Paint;

  constructor(io: Io, { json = false, color }: { json?: boolean; color?: boolean } = {}) {
    this.#io = io;
    this.json = json;
    this.paint = colourEnabled(io.stdout, io.env, color) ? ansiPaint : noPaint;
    this.paintErr = colourEnabled(io.stderr, io.env, color) ? ansiPaint : noPaint;
  }

  /** A value as JSON (one document, pretty-printed, ending in a newline). */
  printJson(value: unknown): void {
    this.#io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A value as one line of JSON (a stream of documents: NDJSON). */
  printJsonLine(value: unknown): void {
    this.#io.stdout.write(`${JSON.stringify(value)}\n`);
  }

  printTable<R>(columns: readonly Column<R>[], rows: readonly R[]): void {
    this.#io.stdout.write(formatTable(columns, rows, this.paint));
  }

  /** The width text on stdout may take: the terminal's, else `fallback`. */
  columns(fallback: number): number {
    const c = this.#io.stdout.columns;
    return this.#io.stdout.isTTY === true && c !== undefined && c > 0 ? c : fallback;
  }

  /** A line of text on stdout. */
  print(text: string): void {
    this.#io.stdout.write(`${text}\n`);
  }

  /** A note for the human on stderr (never part of what scripts parse). */
  note(text: string): void {
    this.#io.stderr.write(`${text}\n`);
  }

  warn(text: string): void {
    this.#io.stderr.write(`${this.paintErr("yellow", "warning:")} ${text}\n`);
  }

  /** A fatal error: `{"error":{"code","message"}}` with --json, else `error: ...`, on stderr. */
  error(code: string, message: string, status?: number): void {
    if (this.json) {
      const error = status === undefined ? { code, message } : { status, code, message };
      this.#io.stderr.write(`${JSON.stringify({ error })}\n`);
      return;
    }
    const what = status === undefined ? "" : ` ${code} (HTTP ${status}):`;
    this.#io.stderr.write(`${this.paintErr("red", "error:")}${what} ${message}\n`);
  }
}

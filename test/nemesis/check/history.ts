// The nemesis history: every operation the workload sent (its invocation, and its completion with
// status and IDs), every push the push endpoint received (invoked when it arrived, completed when
// answered) and every fault the nemesis applied, one JSON object per line, in the order they
// happened. Times are milliseconds since the run started, on the test process's monotonic clock
// (never a gateway's, which the nemesis may skew). The checker reads nothing else.
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";

/** A message as a receive returned it. */
export interface Delivered {
  readonly id: string;
  readonly handle: string;
  readonly count: number;
  /** The body's label (test/nemesis/payload.ts): the whole text of a small body. */
  readonly body: string;
  /** SHA-256 (hex) of the bytes delivered; absent in histories written before it was kept. */
  readonly sha256?: string;
  /** Bytes delivered. */
  readonly size?: number;
}

export type Operation =
  | {
      readonly f: "publish";
      readonly key: string | null;
      /** The body's label; a large body's bytes are kept as their SHA-256 and size only. */
      readonly body: string;
      readonly delay: number;
      /** SHA-256 (hex) of the bytes published. */
      readonly sha256?: string;
      readonly size?: number;
    }
  | { readonly f: "receive"; readonly group: string; readonly max: number; readonly lease: number }
  | {
      readonly f: "ack";
      readonly group: string;
      readonly handle: string;
      readonly messageId: string;
    }
  /**
   * A push the push endpoint received (invoke: it arrived; complete: the endpoint answered, its
   * status, with the pushed message as the only delivery). gw: the gateway that sent it (-1: an
   * address that is no gateway's).
   */
  | { readonly f: "push"; readonly group: string }
  | { readonly f: "readyz" };

export type Invoke = Operation & {
  readonly type: "invoke";
  readonly id: number;
  readonly t: number;
  /** The client (producer, consumer, poller) that sent it: one operation at a time each. */
  readonly proc: string;
  /** Index of the gateway it was sent to. */
  readonly gw: number;
};

/**
 * status: the HTTP status; 0 when the connection failed (refused, reset) and -1 when the client
 * gave up after its bound (the request hung).
 */
export interface Complete {
  readonly type: "complete";
  readonly id: number;
  readonly t: number;
  readonly status: number;
  readonly messageId?: string;
  readonly messages?: readonly Delivered[];
  readonly error?: string;
}

export interface NemesisEvent {
  readonly type: "nemesis";
  readonly t: number;
  readonly fault: string;
  readonly phase: "start" | "end" | "info";
  /** Hosts the fault acts on (n0..n2, g0, g1). */
  readonly targets?: readonly string[];
  readonly info?: Record<string, unknown>;
}

export interface Meta {
  readonly type: "meta";
  readonly t: number;
  readonly startedAt: string;
  readonly topic: string;
  readonly natsVersion: string;
  readonly schedule: string;
  readonly seed: number;
}

export type HistoryLine = Invoke | Complete | NemesisEvent | Meta;

/** Distributes Omit over a union (the built-in one would merge the operation kinds). */
export type Unstamped<T> = T extends unknown ? Omit<T, "t"> : never;

export interface HistoryWriter {
  readonly path: string;
  /** Milliseconds since the run started. */
  now(): number;
  /** Appends a line stamped with the current time. */
  write(line: Unstamped<HistoryLine>): void;
  nextId(): number;
  close(): Promise<void>;
}

export function openHistory(path: string): HistoryWriter {
  const out: WriteStream = createWriteStream(path, { flags: "w" });
  const start = performance.now();
  let id = 0;
  const now = () => Math.round((performance.now() - start) * 10) / 10;
  return {
    path,
    now,
    write(line) {
      out.write(`${JSON.stringify({ t: now(), ...line })}\n`);
    },
    nextId: () => ++id,
    close: () => new Promise<void>((r) => out.end(() => r())),
  };
}

export function readHistory(path: string): HistoryLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as HistoryLine);
}

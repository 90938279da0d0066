// The rounds of `vqs dlq redrive`: the server's redrive, called again and again with a limit
// of one batch, until the dead-letter topic has nothing left it can move, the total limit is
// reached, or Ctrl-C (checked between rounds: a round the server started, it finishes). Each
// message is moved once whichever round or run moves it, so stopping and running again is safe.
import type { ApiClient } from "../api-client.js";

export interface RedriveOptions {
  readonly deadLetterTopic: string;
  /** Where to (default: each message back to the topic it was dead-lettered from). */
  readonly to?: string;
  /** Most messages to move in all (null: all). */
  readonly limit: number | null;
  /** Most messages per request. */
  readonly batch: number;
  readonly signal: AbortSignal;
}

export interface RedriveProgress {
  readonly moved: number;
  readonly remaining: number;
  readonly rounds: number;
}

export type RedriveEnd =
  /** Nothing is left in the dead-letter topic. */
  | "empty"
  /** The last round moved fewer than asked, but some remain: they cannot move (see docs/cli.md, "vqs dlq redrive"). */
  | "stuck"
  | "limit"
  | "interrupted";

export async function redriveRounds(
  api: ApiClient,
  o: RedriveOptions,
  onRound: (p: RedriveProgress) => void,
): Promise<RedriveProgress & { readonly end: RedriveEnd }> {
  let moved = 0;
  let remaining = 0;
  let rounds = 0;
  for (;;) {
    const want = o.limit === null ? o.batch : Math.min(o.batch, o.limit - moved);
    if (want <= 0) return { moved, remaining, rounds, end: "limit" };
    const r = await api.redrive(o.deadLetterTopic, {
      ...(o.to !== undefined ? { topic: o.to } : {}),
      limit: want,
    });
    moved += r.moved;
    remaining = r.remaining;
    rounds++;
    onRound({ moved, remaining, rounds });
    if (remaining === 0) return { moved, remaining, rounds, end: "empty" };
    if (r.moved < want) return { moved, remaining, rounds, end: "stuck" };
    if (o.signal.aborted) return { moved, remaining, rounds, end: "interrupted" };
  }
}

// The loop of `vqs tail`: long-poll receives (20 s, 10 messages) until Ctrl-C or --count,
// each message shown once, then settled as the mode says:
//
// - its own group (no --group): a group of its own (`vqs-tail-<random>`), which starts at the
//   topic's oldest unexpired message; unless `fromStart`, messages published before the tail
//   started (by the gateway's clock) are acknowledged unshown. Everything it receives is
//   acknowledged: nobody else reads that group, and it must not see a message twice.
// - a real group (--group) with `ack`: shown, then acknowledged (the tail consumes them).
// - a real group without `ack`: shown, then released at once (lease 0) so the group's own
//   consumers get it (its delivery count goes up by one). One that comes back to the tail, as
//   nobody else took it, is not shown again and let go for longer each time (5 s doubling to
//   60 s), so the tail stays live without spinning on it.
//
// Ctrl-C aborts the receive in flight (the gateway leaves nothing leased to a client that hung
// up) and lets the settling of what was shown finish.
import type { ApiClient, ReceivedMessage } from "../api-client.js";
import { entryFailure } from "../errors.js";

export const TAIL_WAIT_SECONDS = 20;
export const TAIL_MAX_MESSAGES = 10;
/** Lease of what the tail receives, until it settles it (at once, normally). */
export const TAIL_VISIBILITY_SECONDS = 30;
/** How long a message that came back unclaimed is let go: 5 s doubling up to 60 s. */
export const REPEAT_HOLD_SECONDS = { first: 5, max: 60 } as const;
/** Messages remembered as shown (real group without --ack), oldest forgotten first. */
const SEEN_MAX = 10_000;

export type TailMode = "own-group" | "ack" | "release";

export interface TailOptions {
  readonly topic: string;
  readonly group: string;
  readonly mode: TailMode;
  /** own-group: also show messages published before the tail started. */
  readonly fromStart: boolean;
  /** Stop after showing this many (null: until interrupted). */
  readonly count: number | null;
  readonly signal: AbortSignal;
}

export interface TailSink {
  /**
   * The tail is receiving: `since` is the start by the gateway's clock (ms) when only newer
   * messages are shown (own group, not fromStart), else null.
   */
  started(since: number | null): void;
  /** A message to show, in the order received. */
  message(m: ReceivedMessage): void;
  /** A note for the human (stderr). */
  note(text: string): void;
  warn(text: string): void;
}

export interface TailSummary {
  readonly shown: number;
  /** own-group: older messages acknowledged unshown. */
  readonly skipped: number;
  readonly interrupted: boolean;
}

export async function tail(api: ApiClient, o: TailOptions, sink: TailSink): Promise<TailSummary> {
  let shown = 0;
  let skipped = 0;
  let caughtUp = o.mode !== "own-group" || o.fromStart;
  /** own-group: shown only when published at or after this (ms, the gateway's clock). */
  let since: number | null = null;
  const seen = new Map<string, number>(); // message ID -> times it came back
  let warnedRepeat = false;
  let skipNoted = false;

  const done = () => o.signal.aborted || (o.count !== null && shown >= o.count);
  if (caughtUp) sink.started(null);
  while (!done()) {
    let messages: ReceivedMessage[];
    let date: Date | null;
    try {
      ({ messages, date } = await api.receive(o.topic, o.group, {
        maxMessages: TAIL_MAX_MESSAGES,
        visibilityTimeoutSeconds: TAIL_VISIBILITY_SECONDS,
        // The first receive answers at once: its Date header is when the tail started.
        waitSeconds: since === null && !caughtUp ? 0 : TAIL_WAIT_SECONDS,
        signal: o.signal,
      }));
    } catch (err) {
      if (o.signal.aborted) break;
      throw err;
    }
    if (since === null) {
      // Whole seconds: a message of the second the tail started in is shown, rather than lost.
      since = date ? date.getTime() : Math.floor(Date.now() / 1000) * 1000;
      if (!caughtUp) sink.started(since);
    }

    const settles: Promise<void>[] = [];
    for (const m of messages) {
      if (!caughtUp && Date.parse(m.timestamp) < since) {
        skipped++;
        settles.push(settle(api, o, m, "ack", sink));
        continue;
      }
      caughtUp = true;
      if (o.count !== null && shown >= o.count) {
        // Received after the last one wanted: not shown, so a real group gets it back (even
        // with --ack, which consumes only what was shown); in its own group, done with.
        settles.push(settle(api, o, m, o.mode === "own-group" ? "ack" : "release", sink));
        continue;
      }
      if (o.mode === "release") {
        const repeats = seen.get(m.messageId);
        if (repeats !== undefined) {
          // Back unclaimed: nobody else consumes the group right now.
          if (!warnedRepeat) {
            warnedRepeat = true;
            sink.warn(
              `messages come back to the tail: no other consumer of ${o.group} takes them now; ` +
                "they are shown once, and each time one comes back counts a delivery",
            );
          }
          seen.set(m.messageId, repeats + 1);
          const hold = Math.min(REPEAT_HOLD_SECONDS.first * 2 ** repeats, REPEAT_HOLD_SECONDS.max);
          settles.push(settle(api, o, m, hold, sink));
          continue;
        }
        remember(seen, m.messageId);
      }
      sink.message(m);
      shown++;
      settles.push(settle(api, o, m, o.mode === "release" ? "release" : "ack", sink));
    }
    if (messages.length === 0) caughtUp = true;
    if (caughtUp && skipped > 0 && !skipNoted) {
      skipNoted = true;
      sink.note(`skipped ${skipped} older messages (--from-start shows them)`);
    }
    // Not aborted by Ctrl-C: what was shown is settled before the tail ends.
    await Promise.all(settles);
  }
  return { shown, skipped, interrupted: o.signal.aborted };
}

/** Acknowledges (ack), releases (release) or lets go for `seconds`; a refusal is a warning. */
async function settle(
  api: ApiClient,
  o: TailOptions,
  m: ReceivedMessage,
  how: "ack" | "release" | number,
  sink: TailSink,
): Promise<void> {
  try {
    if (how === "ack") await api.acknowledge(o.topic, o.group, m.receiptHandle);
    else await api.setVisibility(o.topic, o.group, m.receiptHandle, how === "release" ? 0 : how);
  } catch (err) {
    const e = entryFailure(err);
    const what = how === "ack" ? "acknowledge" : "release";
    sink.warn(`could not ${what} ${m.messageId}: ${e.code} (HTTP ${e.status}): ${e.message}`);
  }
}

function remember(seen: Map<string, number>, id: string): void {
  seen.set(id, 0);
  if (seen.size > SEEN_MAX) seen.delete(seen.keys().next().value as string);
}

// Waiting for a state, never for a moment: a probe polled until it holds, and an attempt repeated
// until its answer is the one wanted. A fixed sleep in a test is kept for real time against a
// real server only (a lease or timer there that must run out, a fault held for a while).
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every `everyMs` until it returns true, for up to `ms`; returns whether it did. */
export async function eventually(
  probe: () => boolean | Promise<boolean>,
  ms = 5000,
  everyMs = 50,
): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > until) return false;
    await pause(everyMs);
  }
}

/**
 * Calls `attempt` until `done` accepts its result, at most `tries` times, `everyMs` apart; returns
 * the last result (accepted or not: the caller asserts on it).
 */
export async function attemptUntil<T>(
  attempt: () => Promise<T>,
  done: (result: T) => boolean,
  { tries, everyMs }: { readonly tries: number; readonly everyMs: number },
): Promise<T> {
  let result = await attempt();
  for (let i = 1; i < tries && !done(result); i++) {
    await pause(everyMs);
    result = await attempt();
  }
  return result;
}

/** Waits until the clock reads later than `ms`: a wait on the clock, over once it has moved. */
export async function clockPast(ms: number): Promise<void> {
  await eventually(() => Date.now() > ms, Math.max(0, ms - Date.now()) + 1000, 1);
}

/**
 * A time (ISO 8601) later than whatever was stored before the call and earlier than whatever is
 * stored after it returns: the clock is waited on to move a millisecond past it on each side.
 */
export async function momentBetween(): Promise<string> {
  await clockPast(Date.now());
  const at = Date.now();
  await clockPast(at);
  return new Date(at).toISOString();
}

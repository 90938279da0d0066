// A key's rate, GCRA (the generic cell rate algorithm, as Inngest throttles): one number per key,
// its theoretical arrival time (TAT), kept in the key's record beside its slots. A hand-out is
// due every `intervalMs` (periodSeconds / limit); a key may run up to `burst` hand-outs ahead of
// that schedule, so a quiet key may take `burst` at once, then one per interval.

export interface RateRule {
  /** periodSeconds * 1000 / limit. */
  readonly intervalMs: number;
  /** Hand-outs a quiet key may take at once (1: evenly spaced). */
  readonly burst: number;
}

/** Floating error allowed (an interval like 1000 / 3 ms is not exact). */
const EPSILON_MS = 1e-6;

/**
 * The key's TAT after one more hand-out at `nowMs`, or the time it may go (no room now).
 */
export function gcraTake(
  tatMs: number | null,
  nowMs: number,
  rule: RateRule,
): { readonly ok: true; readonly tatMs: number } | { readonly ok: false; readonly atMs: number } {
  const start = Math.max(tatMs ?? nowMs, nowMs);
  const next = start + rule.intervalMs;
  const allowedAheadMs = rule.burst * rule.intervalMs;
  if (next - nowMs <= allowedAheadMs + EPSILON_MS) return { ok: true, tatMs: next };
  return { ok: false, atMs: next - allowedAheadMs };
}

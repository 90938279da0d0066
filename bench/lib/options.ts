// Command-line values shared by the benchmark scripts: a number within bounds, or a clear error
// naming the option.

/** `raw` as a number from `min` to `max`; else an error naming `--<name>`. */
export function numberOption(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`--${name} must be a number from ${min} to ${max} (got "${raw}")`);
  }
  return n;
}

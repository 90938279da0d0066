// Checks of flag and argument values shared by the commands: a bad value is a UsageError
// (exit 2) before anything is sent. Bounds of the API come from the service's own LIMITS.
import { isHeaderValue, isValidName, LIMITS } from "../queue/limits.js";
import { UsageError } from "./errors.js";

export { LIMITS };

/** A whole number from `min` to `max` (`what` names the flag in the message). */
export function parseInteger(what: string, text: string, min: number, max: number): number {
  const n = /^[0-9]{1,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `, ${min} or more` : ` from ${min} to ${max}`;
    throw new UsageError(`${what} "${text}" must be a whole number${range}`);
  }
  return n;
}

/** A topic or consumer group name as the API accepts it. */
export function checkName(what: "topic" | "group", name: string): string {
  if (!isValidName(name)) {
    throw new UsageError(
      `${what} "${name}" is not a valid name: 1-255 characters of A-Z, a-z, 0-9, '_' and '-'`,
    );
  }
  return name;
}

/** A header value a publish keeps (Content-Type, idempotency key): visible ASCII, 1 to `max`. */
export function checkHeaderValue(what: string, value: string, max: number): string {
  if (value.length < 1 || value.length > max || !isHeaderValue(value)) {
    throw new UsageError(`${what} must be 1..${max} visible ASCII characters`);
  }
  return value;
}

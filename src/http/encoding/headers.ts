// A string header of bounded length, for the headers checked before routing (the auth hook's
// Vqs-Deployment-Id). The operations' own headers are checked against their definitions
// (src/api, src/http/validation.ts).
import { AppError, type ErrorCode } from "../../errors.js";

type HeaderValue = string | string[] | undefined;

/** A single string header of bounded length, or null when absent. */
export function stringHeader(
  value: HeaderValue,
  maxLength: number,
  code: ErrorCode,
  pattern?: RegExp,
): string | null {
  if (value === undefined) return null;
  if (typeof value !== "string" || value.length === 0 || value.length > maxLength) {
    throw new AppError(code);
  }
  if (pattern && !pattern.test(value)) throw new AppError(code);
  return value;
}

// Strict parsing of the API's request headers: an integer header is plain base-10 digits within
// its bounds ("1.5", "1e3", " 60", "0x10", "" and repeats are all refused).
import { AppError, type ErrorCode } from "../../errors.js";

type HeaderValue = string | string[] | undefined;

export function intHeader(
  value: HeaderValue,
  bounds: { min: number; max: number },
  def: number,
  code: ErrorCode,
): number;
export function intHeader(
  value: HeaderValue,
  bounds: { min: number; max: number },
  def: null,
  code: ErrorCode,
): number | null;
export function intHeader(
  value: HeaderValue,
  bounds: { min: number; max: number },
  def: number | null,
  code: ErrorCode,
): number | null {
  if (value === undefined) return def;
  if (typeof value !== "string" || !/^\d{1,16}$/.test(value)) throw new AppError(code);
  const n = Number(value);
  if (n < bounds.min || n > bounds.max) throw new AppError(code);
  return n;
}

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

// Input checked against the API's definitions (src/api): Fastify's validator compiler for path
// parameters and query strings, `checkedHeaders` and `checkedBody` for the headers and JSON
// bodies a handler reads. Only
// values whose schema carries an InputError are checked (the others are documented only), and a
// failure is the catalogue's error the definition names, with the same message the service
// has always given. Bodies are never checked by Fastify: the API scope hands them over as bytes.
import type { FastifySchemaCompiler } from "fastify";
import { Type, type Static, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import Format from "typebox/format";
import { Value } from "typebox/value";
import { checked, INPUT_ERROR, type InputError } from "../api/schema.js";
import type { ErrorCode } from "../errors.js";
import { AppError } from "../errors.js";
import { jsonBody } from "./encoding/json-body.js";

/** A time as the API reads one: an ISO 8601 date and time that Date.parse understands. */
function isApiTime(value: string): boolean {
  return /^\d{4}-\d\d-\d\dT/.test(value) && Number.isFinite(Date.parse(value));
}
// The definitions say `format: date-time`; this is what the service has always taken for it.
Format.Set("date-time", isApiTime);

type Annotated = TSchema & {
  [INPUT_ERROR]?: InputError;
  type?: string;
  minimum?: number;
  maximum?: number;
  enum?: readonly string[];
};
type ObjectSchema = { properties?: Record<string, Annotated> };

/** The answer to a value that fails its schema: the code, and a message. */
function failure(name: string, schema: Annotated, error: InputError, value: unknown): AppError {
  if (error.starCode && typeof value === "string" && value.includes("*")) {
    return new AppError(error.starCode);
  }
  if (error.message !== undefined) return new AppError(error.code, { message: error.message });
  if (error.code !== "invalid_query") return new AppError(error.code);
  if (schema.type === "integer") {
    return new AppError(error.code, {
      message: `\`${name}\` must be an integer from ${schema.minimum} to ${schema.maximum}.`,
    });
  }
  if (schema.enum) {
    return new AppError(error.code, {
      message: `\`${name}\` must be ${schema.enum.join(" or ")}.`,
    });
  }
  return new AppError(error.code);
}

type Part = "params" | "querystring" | "headers";

/**
 * A path, query or header value as its schema's type: an integer is plain base-10 digits (a
 * header's at most 16 of them): "1.5", "1e3", " 60", "0x10" and "" stay strings, and fail.
 */
function converted(schema: Annotated, value: string, part: Part): unknown {
  const digits = part === "headers" ? /^\d{1,16}$/ : /^\d+$/;
  return schema.type === "integer" && digits.test(value) ? Number(value) : value;
}

type Checked = { value: Record<string, unknown> } | { error: AppError };

/** A checked value's name, schema and its check compiled once (Value.Check interprets the
 * schema on every call: about 1 µs of CPU per name, against 0.03 µs compiled). */
type CheckedValue = readonly [name: string, schema: Annotated, check: (v: unknown) => boolean];

/**
 * Checks the annotated values of a path, a query string or headers, in the schema's order (the
 * order the service answers in when several are bad). `input` is keyed as the schema is.
 */
function checkValues(
  checked: readonly CheckedValue[],
  input: Record<string, unknown>,
  part: Part,
): Checked {
  const value: Record<string, unknown> = { ...input };
  for (const [name, s, check] of checked) {
    const error = s[INPUT_ERROR]!;
    const raw = input[name];
    if (raw === undefined) continue;
    if (typeof raw !== "string") {
      // Given more than once (the query string parser makes it a list).
      const message = part === "querystring" ? `\`${name}\` must be given once.` : undefined;
      return { error: new AppError(error.code, message ? { message } : {}) };
    }
    const v = converted(s, raw, part);
    if (!check(v)) return { error: failure(name, s, error, raw) };
    value[name] = v;
  }
  return { value };
}

function checkedProperties(schema: ObjectSchema): [string, Annotated][] {
  return Object.entries(schema.properties ?? {}).filter(([, s]) => s[INPUT_ERROR]);
}

function compiled(schema: Annotated): (v: unknown) => boolean {
  const validator = Compile(schema);
  return (v) => validator.Check(v);
}

/** An object schema's checked values, compiled, and its property names (headers): once each. */
interface Prepared {
  /** Each property's name and, for headers, its lower-case form. */
  readonly names: readonly (readonly [name: string, lower: string])[];
  readonly checked: readonly CheckedValue[];
}
const prepared = new WeakMap<object, Prepared>();
function preparedOf(schema: ObjectSchema): Prepared {
  let p = prepared.get(schema);
  if (!p) {
    const checked = checkedProperties(schema).map(([n, s]) => [n, s, compiled(s)] as const);
    const names = Object.keys(schema.properties ?? {}).map((n) => [n, n.toLowerCase()] as const);
    p = { names, checked };
    prepared.set(schema, p);
  }
  return p;
}

function partValidator(schema: ObjectSchema, part: Part) {
  const { checked } = preparedOf(schema);
  if (checked.length === 0) return () => true;
  return (data: unknown) => checkValues(checked, (data ?? {}) as Record<string, unknown>, part);
}

/**
 * Fastify's validator compiler: path parameters and query strings. Never headers (a handler
 * checks them with `checkedHeaders` where the service always did: after Accept negotiation, and
 * for each part of a batch) nor a body.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) =>
  httpPart === "params" || httpPart === "querystring"
    ? partValidator(schema, httpPart)
    : () => true;

/**
 * A JSON body read as its definition says, else 400: a checked property's own error when the
 * body is an object with every required property and none the definition refuses, and that one
 * fails; else the body's error.
 */
export function checkedBody<T extends TSchema>(body: unknown, schema: T): Static<T> {
  const parsed = jsonBody(body);
  if (Value.Check(schema, parsed)) return parsed;
  const { required = [], properties = {} } = schema as ObjectSchema & { required?: string[] };
  const closed = (schema as { additionalProperties?: unknown }).additionalProperties === false;
  if (
    typeof parsed === "object" &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    required.every((name) => Object.hasOwn(parsed, name)) &&
    (!closed || Object.keys(parsed).every((name) => Object.hasOwn(properties, name)))
  ) {
    for (const [name, s] of checkedProperties(schema)) {
      const value = (parsed as Record<string, unknown>)[name];
      if (value !== undefined && !Value.Check(s, value)) throw answer(s[INPUT_ERROR]!);
    }
  }
  throw answer((schema as Annotated)[INPUT_ERROR] ?? { code: "invalid_request_body" });
}

function answer(error: InputError): AppError {
  return new AppError(error.code, error.message !== undefined ? { message: error.message } : {});
}

/**
 * Headers read as their definition says (its property names, in any case): the checked ones
 * converted, or the definition's error. Absent ones are absent (the handler applies defaults).
 */
export function checkedHeaders<T extends TSchema>(
  headers: Record<string, string | string[] | undefined>,
  schema: T,
): Static<T> {
  const { names, checked } = preparedOf(schema);
  const input: Record<string, unknown> = {};
  for (const [name, lower] of names) input[name] = headers[lower];
  const result = checkValues(checked, input, "headers");
  if ("error" in result) throw result.error;
  return result.value as Static<T>;
}

/**
 * One integer header, checked as a definition's integer header is (plain base-10 digits, at most
 * 16, within the bounds; absent: `def`); the error is `code`.
 */
export function intHeader<D extends number | null>(
  value: string | string[] | undefined,
  bounds: { min: number; max: number },
  def: D,
  code: ErrorCode,
): number | D {
  const schema = checked(Type.Integer({ minimum: bounds.min, maximum: bounds.max }), { code });
  const result = checkValues(
    [["value", schema, (v) => Value.Check(schema, v)]],
    { value },
    "headers",
  );
  if ("error" in result) throw result.error;
  return (result.value.value as number | undefined) ?? def;
}

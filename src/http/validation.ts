// Input checked against the API's definitions (src/api): Fastify's validator compiler for path
// parameters and query strings, and `checkedBody` for the JSON bodies a handler reads. Only
// values whose schema carries an InputError are checked (the others are documented only), and a
// failure is the catalogue's error the definition names, with the same message the service
// has always given. Bodies are never checked by Fastify: the API scope hands them over as bytes.
import type { FastifySchemaCompiler } from "fastify";
import type { Static, TSchema } from "typebox";
import Format from "typebox/format";
import { Value } from "typebox/value";
import { INPUT_ERROR, type InputError } from "../api/schema.js";
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

/** A query string or path value as its schema's type: an integer is plain base-10 digits. */
function converted(schema: Annotated, value: string): unknown {
  return schema.type === "integer" && /^\d+$/.test(value) ? Number(value) : value;
}

/** Checks the annotated values of a query string or the path, in the schema's order. */
function partValidator(schema: ObjectSchema, httpPart: string) {
  const checked = Object.entries(schema.properties ?? {}).filter(([, s]) => s[INPUT_ERROR]);
  if (checked.length === 0) return () => true;
  return (data: unknown) => {
    const input = (data ?? {}) as Record<string, unknown>;
    const value: Record<string, unknown> = { ...input };
    for (const [name, s] of checked) {
      const error = s[INPUT_ERROR]!;
      const raw = input[name];
      if (raw === undefined) continue;
      if (typeof raw !== "string") {
        // A parameter given more than once (the query string parser makes it a list).
        const message = httpPart === "querystring" ? `\`${name}\` must be given once.` : undefined;
        return { error: new AppError(error.code, message ? { message } : {}) };
      }
      const v = converted(s, raw);
      if (!Value.Check(s, v)) return { error: failure(name, s, error, raw) };
      value[name] = v;
    }
    return { value };
  };
}

/** Fastify's validator compiler: path parameters and query strings; never a body. */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) =>
  httpPart === "params" || httpPart === "querystring"
    ? partValidator(schema, httpPart)
    : () => true;

/** A JSON body read as its definition says: 400 with the definition's error when it is not. */
export function checkedBody<T extends TSchema>(body: unknown, schema: T): Static<T> {
  const parsed = jsonBody(body);
  if (Value.Check(schema, parsed)) return parsed;
  const error = (schema as Annotated)[INPUT_ERROR] ?? { code: "invalid_request_body" };
  throw new AppError(error.code, error.message !== undefined ? { message: error.message } : {});
}

// The building blocks of the API's definitions (TypeBox): each is a JSON Schema that the
// gateway checks input with and documents, and a TypeScript type (`Static<…>`) for the
// gateway, the CLI and the console. Imports nothing at run time but TypeBox, so the console
// builds against it.
import { Type, type Static, type TSchema, type TUnsafe } from "typebox";
import type { ErrorCode } from "../errors.js";
import { LIMITS } from "../queue/limits.js";

/** Topic and consumer group names (as `isValidName` in src/queue/limits.ts checks them). */
export const NAME = Type.String({
  minLength: 1,
  maxLength: LIMITS.nameMaxLength,
  pattern: "^[A-Za-z0-9_-]+$",
});

export const TIME = Type.String({ format: "date-time" });

export const COUNT = Type.Integer({ minimum: 0 });

/** A reference to a shared schema (a component, registered under its `$id`). */
export function ref<T extends TSchema>(component: T): TUnsafe<Static<T>> {
  const id = (component as { $id?: unknown }).$id;
  if (typeof id !== "string") throw new Error("ref: the schema has no $id");
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/** A reference to a component the API documents whose type is declared elsewhere. */
export function refTo<T>(id: string): TUnsafe<T> {
  return Type.Unsafe<T>({ $ref: `${id}#` });
}

/** `schema` or JSON null. */
export function nullable<T extends TSchema>(
  schema: T,
  options: { description?: string } = {},
): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ oneOf: [schema, { type: "null" }], ...options });
}

/** `schema` with a description of its own. */
export function described<T extends TSchema>(schema: T, description: string): T {
  return { ...schema, description };
}

/**
 * What a request gets when one of its values fails its schema: the catalogue's code, and a
 * message (else the catalogue's). `starCode`: the code when the value contains `*` (a topic
 * pattern where only a name is taken). The gateway's validator reads it (src/http/validation.ts);
 * the document leaves it out.
 */
export interface InputError {
  readonly code: ErrorCode;
  readonly message?: string;
  readonly starCode?: ErrorCode;
}

export const INPUT_ERROR = "x-input-error";

/** A value the gateway checks against its schema, answering `error` when it fails. */
export function checked<T extends TSchema>(schema: T, error: InputError): T {
  return { ...schema, [INPUT_ERROR]: error };
}

// The path of an operation on a topic or a group: the names are checked (the catalogue's name
// codes; `*` is a pattern, which only the settings operations take).

export const TOPIC_PARAM = checked(
  described(NAME, "Topic name: 1-255 characters of A-Z, a-z, 0-9, '_' and '-'."),
  { code: "invalid_topic_name", starCode: "invalid_topic_pattern" },
);
export const GROUP_NAME = described(NAME, "Consumer group name, as topic names.");
export const GROUP_PARAM = checked(GROUP_NAME, { code: "invalid_consumer_group_name" });

export const TOPIC_PATH = Type.Object({ topic: TOPIC_PARAM });
export const GROUP_PATH = Type.Object({ topic: TOPIC_PARAM, group: GROUP_PARAM });

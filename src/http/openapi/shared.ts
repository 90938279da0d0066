// What every part of the API document shares: references to the components, the path
// parameters, the namespace headers, and each operation's error responses, built from the error
// catalogue so that a code the document lists is one the service answers.
import { ERRORS, type ErrorCode } from "../../errors.js";
import { LIMITS } from "../../queue/limits.js";

/** A reference to a shared schema (plugin.ts registers each under its `$id`). */
export function ref(id: string): { $ref: string } {
  return { $ref: `${id}#` };
}

/** `schema` or JSON null. */
export function nullable(schema: object): object {
  return { oneOf: [schema, { type: "null" }] };
}

export { NAME, TIME } from "../../api/schema.js";
import { GROUP_NAME } from "../../api/schema.js";

/** The settings operations' path: they check it themselves (a pattern before the group). */
const PARAMS = {
  topicOrPattern: {
    type: "string",
    minLength: 1,
    maxLength: LIMITS.nameMaxLength + 1,
    pattern: "^[A-Za-z0-9_-]+\\*?$",
    description:
      "A topic name, or a prefix pattern `prefix*` that applies to every topic whose name starts with the prefix.",
  },
  group: GROUP_NAME,
} as const;

/** The path parameters schema of a settings route, from its names in the path. */
export function pathParams(...names: (keyof typeof PARAMS)[]): object {
  const properties: Record<string, object> = {};
  for (const name of names) {
    // The settings routes call their pattern `:topic`.
    properties[name === "topicOrPattern" ? "topic" : name] = PARAMS[name];
  }
  return { type: "object", required: Object.keys(properties), properties };
}

/** Headers every /api/v3 request may carry (besides Authorization). */
const NAMESPACE_HEADERS = {
  "Vqs-Deployment-Id": {
    type: "string",
    minLength: 1,
    maxLength: LIMITS.deploymentIdMaxLength,
    pattern: "^[\\x21-\\x7e]+$",
    description:
      "The deployment whose namespace the request acts in; absent: the token's deploymentless namespace.",
  },
  "Vqs-Namespace": {
    type: "string",
    description:
      "Operators only: act in this namespace, `team/project/environment[/deployment]`, each part percent-encoded. Not together with Vqs-Deployment-Id.",
  },
} as const;

/** The headers schema of an /api/v3 route: the namespace headers and the route's own. */
export function apiHeaders(own: Record<string, object> = {}): object {
  return { type: "object", properties: { ...NAMESPACE_HEADERS, ...own } };
}

/** An integer within the service's bounds (and its default), e.g. a Vqs-* header. */
export function boundedInt(
  bounds: { min: number; max: number; default?: number },
  description: string,
): { description: string; [key: string]: unknown } {
  return {
    type: "integer",
    minimum: bounds.min,
    maximum: bounds.max,
    ...(bounds.default !== undefined ? { default: bounds.default } : {}),
    description,
  };
}

/** The errors of a route's `{topic}`, and of its `{topic}` and `{group}`. */
export const TOPIC_ERRORS = ["invalid_topic_name", "invalid_topic_pattern"] as const;
export const GROUP_ERRORS = [...TOPIC_ERRORS, "invalid_consumer_group_name"] as const;

/** Every error answer (src/http/error-handler.ts renders them). */
export const ERROR_COMPONENT = {
  $id: "Error",
  description: "An error: a stable code and a message.",
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "Stable; docs/errors.md lists them all." },
        message: { type: "string" },
      },
    },
    originalMessageId: {
      type: "string",
      description: "`message_duplicate` only: the ID of the message the duplicate was of.",
    },
    limit: {
      type: "integer",
      description:
        "`topic_limit_reached`, `group_limit_reached`, `settings_limit_reached` (of a tenant) and `deployment_limit_reached` only: the cap.",
    },
    scope: {
      type: "string",
      enum: ["tenant"],
      description:
        "A cap refused for the tenant (all its deployments together), not for the namespace alone.",
    },
  },
};

/** What any authenticated request can fail with, whatever the operation. */
const AUTH_ERRORS: readonly ErrorCode[] = [
  "invalid_url",
  "invalid_deployment_id",
  "invalid_namespace",
  "missing_token",
  "invalid_token",
  "operator_only",
  "tenant_not_allowed",
  "internal_error",
  "auth_unavailable",
];

/**
 * The error responses of an operation: one per status, each listing its codes (an `enum` of
 * `error.code`, and the catalogue's message of each in the description). 429 carries
 * Retry-After. `auth: false` for the routes outside the authenticated API.
 */
export function errorResponses(
  codes: readonly ErrorCode[],
  { auth = true }: { auth?: boolean } = {},
): Record<string, object> {
  const listed = new Set([...(auth ? AUTH_ERRORS : []), ...codes]);
  const byStatus = new Map<number, ErrorCode[]>();
  // In the catalogue's order, as docs/errors.md lists them.
  for (const code of (Object.keys(ERRORS) as ErrorCode[]).filter((c) => listed.has(c))) {
    const status = ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, object> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: list.map((c) => `\`${c}\`: ${ERRORS[c].message}`).join("\n\n"),
      ...(status === 429
        ? { headers: { "Retry-After": { type: "integer", description: "Seconds to wait." } } }
        : {}),
      allOf: [ref("Error"), { properties: { error: { properties: { code: { enum: list } } } } }],
    };
  }
  return responses;
}

/** A JSON response: its description and schema. */
export function json<T extends object>(
  description: string,
  schema: T,
): T & { description: string } {
  return { description, ...schema };
}

/** A response without a body (204). */
export function noContent(description: string): object {
  return { description, type: "null" };
}

/** A route schema's mark that its body may be left out (plugin.ts: requestBody.required false). */
export const OPTIONAL_BODY = { "x-optional-body": true } as const;

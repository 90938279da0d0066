// The consumer settings and redrive operations' definitions (TypeBox): the settings document (as
// stored and answered, defaults filled in), the PUT body (every field optional, unknown fields
// refused; src/queue/settings/validate.ts checks it, with a message naming the field), and the
// redrive's body and answer. Bounds and defaults come from SETTINGS_LIMITS and LIMITS, the ones
// the service checks. Imports nothing at run time but TypeBox and those limits.
import { Type, type Static, type TSchema } from "typebox";
import { LIMITS } from "../queue/limits.js";
import { SETTINGS_LIMITS as L } from "../queue/settings/settings-limits.js";
import { checked, COUNT, NAME, nullable, ref, TIME } from "./schema.js";

/** An integer within its bounds (and its default). */
function bounded(bounds: { min: number; max: number; default?: number }, description: string) {
  return Type.Integer({
    minimum: bounds.min,
    maximum: bounds.max,
    ...(bounds.default !== undefined ? { default: bounds.default } : {}),
    description,
  });
}

const PUSH_FIELDS = {
  url: Type.String({
    format: "uri",
    maxLength: L.pushUrlMaxLength,
    description:
      "Where each message is POSTed: an absolute http or https URL without user, password or fragment, inside the operator's allow-lists for the namespace (VQS_PUSH_ALLOWED_URLS, VQS_TENANT_OVERRIDES). Stored normalized.",
  }),
  maxConcurrency: bounded(L.maxConcurrency, "Pushes in flight for the group, region-wide."),
  timeoutSeconds: bounded(L.timeoutSeconds, "Longest a push may take before it failed."),
  autoAck: Type.Boolean({
    default: L.autoAck.default,
    description: "true: a 2xx answer acknowledges the message.",
  }),
};

const RETRY_FIELDS = {
  afterSeconds: bounded(L.afterSeconds, "A failed push comes back this much later."),
  initialDelaySeconds: bounded(
    L.initialDelaySeconds,
    "A message is first pushed this long after it became visible.",
  ),
  maxBackoffSeconds: bounded(
    { min: L.afterSeconds.min, ...L.maxBackoffSeconds },
    "Cap of the doubling wait after 32 failed pushes; at least afterSeconds (default: 3600, or afterSeconds when larger).",
  ),
};

const DEAD_LETTER_FIELDS = {
  topic: Type.String({
    ...NAME,
    description: "Where a message goes after maxDeliveries deliveries; not the group's own topic.",
  }),
  maxDeliveries: bounded(L.maxDeliveries, "Deliveries before a message is dead-lettered."),
};

const FLOW_RATE_FIELDS = {
  limit: bounded(
    L.flowRateLimit,
    "Hand-outs of one key per period (a redelivery counts again; a message waiting does not).",
  ),
  periodSeconds: bounded(
    L.flowRatePeriodSeconds,
    "The period of the limit; periodSeconds * burst / limit is at most 10800.",
  ),
  burst: bounded(
    L.flowRateBurst,
    "Hand-outs of one key that may go at once after a quiet time (GCRA); default: limit. 1: evenly spaced.",
  ),
};

const FLOW_CONTROL_FIELDS = {
  key: Type.String({
    minLength: 1,
    maxLength: L.flowKeyMaxLength,
    pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
    description:
      "The message header whose value is a message's key (stored lowercased): one a message keeps as its own (not Vqs-*, Content-*, ce-*, x-vercel-queue-*, credentials or trace context). Messages without it are not limited.",
  }),
  concurrency: nullable(bounded(L.flowConcurrency, "Messages of one key in flight at once."), {
    description:
      "null: no limit per key on messages in flight. At least one of concurrency, rate and ordered is set; with ordered, 1 or null.",
  }),
  rate: nullable(Type.Object(FLOW_RATE_FIELDS, { additionalProperties: false }), {
    description:
      "Hand-outs per key per period, GCRA-style: a message of a key without room waits (no delivery counted). null: no rate.",
  }),
  ordered: Type.Boolean({
    default: false,
    description:
      "One message of a key in flight, handed out in publish order: the key's oldest unacknowledged message first, blocking its key until acknowledged, dead-lettered or expired.",
  }),
};

export const PUSH_SETTINGS = Type.Object(PUSH_FIELDS, { $id: "PushSettings" });
export const FLOW_CONTROL_SETTINGS = Type.Object(FLOW_CONTROL_FIELDS, {
  $id: "FlowControlSettings",
  description:
    "Limits per key inside the group: its messages are keyed by the value of one of their headers.",
});
export const RETRY_SETTINGS = Type.Object(RETRY_FIELDS, { $id: "RetrySettings" });
export const DEAD_LETTER_SETTINGS = Type.Object(DEAD_LETTER_FIELDS, { $id: "DeadLetterSettings" });

const SETTINGS_FIELDS = {
  push: nullable(ref(PUSH_SETTINGS), { description: "null: the group is polled." }),
  retry: ref(RETRY_SETTINGS),
  deadLetter: nullable(ref(DEAD_LETTER_SETTINGS), {
    description: "null: messages are retried until acknowledged or expired.",
  }),
  flowControl: nullable(ref(FLOW_CONTROL_SETTINGS), { description: "null: no limit per key." }),
};

export const CONSUMER_SETTINGS = Type.Object(SETTINGS_FIELDS, {
  $id: "ConsumerSettings",
  description: "Settings, as they apply.",
});

export const CONSUMER_SETTINGS_DOCUMENT = Type.Object(
  {
    topic: Type.String({ description: "The topic, or the pattern `prefix*`." }),
    consumerGroup: NAME,
    ...SETTINGS_FIELDS,
    updatedAt: TIME,
  },
  {
    $id: "ConsumerSettingsDocument",
    description: "A stored settings document, defaults filled in.",
  },
);

/** Every field optional, no field unknown (`required`: the fields that stay required). */
function partial<P extends Record<string, TSchema>, R extends keyof P & string>(
  properties: P,
  required: readonly R[],
) {
  const fields = Object.fromEntries(
    Object.entries(properties).map(([k, s]) => [
      k,
      (required as readonly string[]).includes(k) ? s : Type.Optional(s),
    ]),
  ) as { [K in keyof P]: K extends R ? P[K] : ReturnType<typeof Type.Optional<P[K]>> };
  return Type.Object(fields, { additionalProperties: false });
}

export const CONSUMER_SETTINGS_INPUT = Type.Object(
  {
    push: Type.Optional(nullable(partial(PUSH_FIELDS, ["url"]))),
    retry: Type.Optional(partial(RETRY_FIELDS, [])),
    deadLetter: Type.Optional(nullable(partial(DEAD_LETTER_FIELDS, ["topic", "maxDeliveries"]))),
    flowControl: Type.Optional(
      nullable(
        partial(
          {
            ...FLOW_CONTROL_FIELDS,
            rate: nullable(partial(FLOW_RATE_FIELDS, ["limit", "periodSeconds"])),
          },
          ["key"],
        ),
      ),
    ),
  },
  {
    $id: "ConsumerSettingsInput",
    description: "A settings document to store: every field optional, no field unknown.",
    additionalProperties: false,
  },
);

export const SETTINGS_LIST = Type.Object({
  settings: Type.Array(ref(CONSUMER_SETTINGS_DOCUMENT)),
});

export type PushSettings = Static<typeof PUSH_SETTINGS>;
export type RetrySettings = Static<typeof RETRY_SETTINGS>;
export type DeadLetterSettings = Static<typeof DEAD_LETTER_SETTINGS>;
export type FlowControlSettings = Static<typeof FLOW_CONTROL_SETTINGS>;
export type ConsumerSettings = Static<typeof CONSUMER_SETTINGS>;
export type ConsumerSettingsDocument = Static<typeof CONSUMER_SETTINGS_DOCUMENT>;
export type ConsumerSettingsInput = Static<typeof CONSUMER_SETTINGS_INPUT>;
export type SettingsList = Static<typeof SETTINGS_LIST>;

/** The components the settings operations reference, in the document's order. */
export const SETTINGS_COMPONENTS = [
  PUSH_SETTINGS,
  RETRY_SETTINGS,
  DEAD_LETTER_SETTINGS,
  FLOW_CONTROL_SETTINGS,
  CONSUMER_SETTINGS,
  CONSUMER_SETTINGS_DOCUMENT,
  CONSUMER_SETTINGS_INPUT,
];

// Redrive.

const REDRIVE_LIMIT = LIMITS.redriveLimit;

/**
 * A redrive's body (an empty body is `{}`): a JSON object with at most `topic` (a name, else 400
 * invalid_topic_name) and `limit`; anything else 400 invalid_request_body with the shape.
 */
export const REDRIVE_BODY = checked(
  Type.Object(
    {
      topic: Type.Optional(
        checked(
          Type.String({ ...NAME, description: "Where to move; absent: where each came from." }),
          {
            code: "invalid_topic_name",
          },
        ),
      ),
      limit: Type.Optional(bounded(REDRIVE_LIMIT, "Messages to move at most.")),
    },
    { additionalProperties: false, description: "An empty body is `{}`." },
  ),
  {
    code: "invalid_request_body",
    message: `The body must be JSON of the form {"topic": <topic name>, "limit": <integer ${REDRIVE_LIMIT.min}..${REDRIVE_LIMIT.max}>}, both optional.`,
  },
);
export type RedriveBody = Static<typeof REDRIVE_BODY>;

export const REDRIVE_RESULT = Type.Object({
  moved: COUNT,
  remaining: Type.Integer({ minimum: 0, description: "Messages still in the dead-letter topic." }),
});
export type RedriveResult = Static<typeof REDRIVE_RESULT>;

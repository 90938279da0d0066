// The consumer settings components: the document (as stored and answered, defaults filled in)
// and the PUT body (every field optional, unknown fields refused). Bounds and defaults come from
// SETTINGS_LIMITS, the ones the service checks.
import { SETTINGS_LIMITS as L } from "../../queue/settings/consumer-settings.js";
import { boundedInt, NAME, nullable, ref } from "./shared.js";

const PUSH_FIELDS = {
  url: {
    type: "string",
    format: "uri",
    maxLength: L.pushUrlMaxLength,
    description:
      "Where each message is POSTed: an absolute http or https URL without user, password or fragment, inside the operator's VQS_PUSH_ALLOWED_URLS. Stored normalized.",
  },
  maxConcurrency: boundedInt(L.maxConcurrency, "Pushes in flight for the group, region-wide."),
  timeoutSeconds: boundedInt(L.timeoutSeconds, "Longest a push may take before it failed."),
  autoAck: {
    type: "boolean",
    default: L.autoAck.default,
    description: "true: a 2xx answer acknowledges the message.",
  },
};

const RETRY_FIELDS = {
  afterSeconds: boundedInt(L.afterSeconds, "A failed push comes back this much later."),
  initialDelaySeconds: boundedInt(
    L.initialDelaySeconds,
    "A message is first pushed this long after it became visible.",
  ),
  maxBackoffSeconds: boundedInt(
    { min: L.afterSeconds.min, ...L.maxBackoffSeconds },
    "Cap of the doubling wait after 32 failed pushes; at least afterSeconds (default: 3600, or afterSeconds when larger).",
  ),
};

const DEAD_LETTER_FIELDS = {
  topic: {
    ...NAME,
    description: "Where a message goes after maxDeliveries deliveries; not the group's own topic.",
  },
  maxDeliveries: boundedInt(L.maxDeliveries, "Deliveries before a message is dead-lettered."),
};

function allRequired(id: string, properties: Record<string, object>): object {
  return { $id: id, type: "object", required: Object.keys(properties), properties };
}

const SETTINGS_FIELDS = {
  push: { ...nullable(ref("PushSettings")), description: "null: the group is polled." },
  retry: ref("RetrySettings"),
  deadLetter: {
    ...nullable(ref("DeadLetterSettings")),
    description: "null: messages are retried until acknowledged or expired.",
  },
};

const SETTINGS_INPUT = {
  $id: "ConsumerSettingsInput",
  description: "A settings document to store: every field optional, no field unknown.",
  type: "object",
  additionalProperties: false,
  properties: {
    push: nullable({
      type: "object",
      additionalProperties: false,
      required: ["url"],
      properties: PUSH_FIELDS,
    }),
    retry: { type: "object", additionalProperties: false, properties: RETRY_FIELDS },
    deadLetter: nullable({
      type: "object",
      additionalProperties: false,
      required: ["topic", "maxDeliveries"],
      properties: DEAD_LETTER_FIELDS,
    }),
  },
};

export const SETTINGS_COMPONENTS = [
  allRequired("PushSettings", PUSH_FIELDS),
  allRequired("RetrySettings", RETRY_FIELDS),
  allRequired("DeadLetterSettings", DEAD_LETTER_FIELDS),
  { ...allRequired("ConsumerSettings", SETTINGS_FIELDS), description: "Settings, as they apply." },
  {
    ...allRequired("ConsumerSettingsDocument", {
      topic: { type: "string", description: "The topic, or the pattern `prefix*`." },
      consumerGroup: NAME,
      ...SETTINGS_FIELDS,
      updatedAt: { type: "string", format: "date-time" },
    }),
    description: "A stored settings document, defaults filled in.",
  },
  SETTINGS_INPUT,
];

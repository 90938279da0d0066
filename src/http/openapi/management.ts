// The management API's components: Topic, ConsumerGroup, PeekedMessage and Namespace (docs/api.md,
// "Management API"), as ManagementService answers them.
import { NAME, nullable, ref, TIME } from "./shared.js";

const COUNT = { type: "integer", minimum: 0 } as const;

/** A component whose properties are all there, but the `optional` ones. */
function object(
  id: string,
  description: string,
  properties: Record<string, object>,
  optional: readonly string[] = [],
): object {
  const required = Object.keys(properties).filter((p) => !optional.includes(p));
  return { $id: id, description, type: "object", required, properties };
}

const TOPIC = object("Topic", "A topic's figures and the settings that apply to its groups.", {
  name: NAME,
  messages: { ...COUNT, description: "Messages consumer groups can see." },
  delayed: { ...COUNT, description: "Delayed messages, not yet visible." },
  bytes: { ...COUNT, description: "The topic's storage." },
  oldestMessageAt: { ...nullable(TIME), description: "null when empty." },
  newestMessageAt: { ...nullable(TIME), description: "null when empty." },
  consumerGroups: COUNT,
  settings: {
    type: "array",
    items: {
      type: "object",
      required: ["topic", "consumerGroup", "push", "deadLetterTopic"],
      properties: {
        topic: { type: "string", description: "The topic, or the pattern the document is for." },
        consumerGroup: NAME,
        push: { type: "boolean" },
        deadLetterTopic: nullable(NAME),
      },
    },
  },
});

const PUSH_HEALTH = object("PushHealth", "How a pushed group's pushes went lately.", {
  lastSuccessAt: nullable(TIME),
  lastFailureAt: nullable(TIME),
  lastFailure: nullable({ type: "string" }),
});

const GROUP = object("ConsumerGroup", "A consumer group's figures, settings and push health.", {
  name: NAME,
  backlog: { ...COUNT, description: "Messages not yet delivered." },
  inFlight: { ...COUNT, description: "Delivered, not acknowledged." },
  delayed: { ...COUNT, description: "The topic's delayed messages." },
  oldestUnacknowledgedAgeSeconds: COUNT,
  deliveries: { ...COUNT, description: "Deliveries made, redeliveries included." },
  redelivered: COUNT,
  acknowledgedThrough: {
    ...COUNT,
    description: "Stream position up to which all are acknowledged.",
  },
  position: { ...COUNT, description: "The last delivered stream position." },
  deadLettered: COUNT,
  settings: { ...nullable(ref("ConsumerSettings")), description: "The effective settings." },
  pushHealth: { ...nullable(ref("PushHealth")), description: "null unless pushed." },
});

const PEEKED = object(
  "PeekedMessage",
  "A message as peeking shows it (nothing is leased).",
  {
    messageId: { type: "string" },
    timestamp: TIME,
    expiresAt: TIME,
    contentType: { type: "string" },
    size: { ...COUNT, description: "Payload bytes." },
    preview: { type: "string", description: "The first 256 bytes, as previewEncoding says." },
    previewEncoding: { enum: ["utf8", "base64"] },
    payload: {
      type: "string",
      contentEncoding: "base64",
      description: "The whole payload, with payload=full only.",
    },
    deadLetter: nullable(ref("DeadLetterOrigin")),
  },
  ["payload"],
);

const NAMESPACE = object("Namespace", "A namespace with topics in this region.", {
  team: { type: "string" },
  project: { type: "string" },
  environment: { type: "string" },
  deploymentId: nullable({ type: "string" }),
  label: { type: "string", description: "What Vqs-Namespace takes to act in it." },
  topics: COUNT,
});

export const MANAGEMENT_COMPONENTS = [TOPIC, PUSH_HEALTH, GROUP, PEEKED, NAMESPACE];

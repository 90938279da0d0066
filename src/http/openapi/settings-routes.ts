// The route schemas of the consumer settings (docs/api.md, "Consumer settings") and of the dead-letter
// redrive. The settings body is checked by src/queue/settings/validate.ts (a message naming the
// field); the redrive's path and body by their definitions (src/api).
import { TOPIC_PATH } from "../../api/schema.js";
import { REDRIVE_BODY, REDRIVE_RESULT, SETTINGS_LIST } from "../../api/settings.js";
import {
  apiHeaders,
  errorResponses,
  json,
  noContent,
  OPTIONAL_BODY,
  pathParams,
  ref,
  TOPIC_ERRORS,
} from "./shared.js";

const SETTINGS_PATH_ERRORS = [...TOPIC_ERRORS, "invalid_consumer_group_name"] as const;

const AT = {
  params: pathParams("topicOrPattern", "group"),
  headers: apiHeaders(),
  tags: ["settings"],
};

export const PUT_SETTINGS = {
  operationId: "putConsumerSettings",
  summary: "Store a group's settings",
  description:
    "Replaces the document of the group on the topic, or on every topic the pattern `prefix*` matches. The body is JSON whatever its Content-Type, at most 16 KiB.",
  ...AT,
  body: { content: { "application/json": { schema: ref("ConsumerSettingsInput") } } },
  response: {
    200: json("The stored document, defaults filled in.", ref("ConsumerSettingsDocument")),
    ...errorResponses([
      ...SETTINGS_PATH_ERRORS,
      "invalid_request_body",
      "invalid_settings",
      "push_destination_not_allowed",
      "settings_limit_reached",
      "deployment_limit_reached",
      "payload_too_large",
      "storage_unavailable",
    ]),
  },
};

export const GET_SETTINGS = {
  operationId: "getConsumerSettings",
  summary: "Read a group's settings",
  description: "The document as stored, named exactly (a pattern by its pattern).",
  ...AT,
  response: {
    200: json("The stored document.", ref("ConsumerSettingsDocument")),
    ...errorResponses([...SETTINGS_PATH_ERRORS, "settings_not_found", "storage_unavailable"]),
  },
};

export const DELETE_SETTINGS = {
  operationId: "deleteConsumerSettings",
  summary: "Remove a group's settings",
  description: "404 also when a retried DELETE finds that its first attempt succeeded.",
  ...AT,
  response: {
    204: noContent("Removed."),
    ...errorResponses([...SETTINGS_PATH_ERRORS, "settings_not_found", "storage_unavailable"]),
  },
};

export const LIST_SETTINGS = {
  operationId: "listConsumerSettings",
  summary: "List the namespace's settings",
  description: "Every settings document of the namespace, ordered by topic and group.",
  tags: ["settings"],
  headers: apiHeaders(),
  response: {
    200: json("The documents.", SETTINGS_LIST),
    ...errorResponses([]),
  },
};

export const REDRIVE = {
  operationId: "redriveDeadLetters",
  summary: "Move dead letters back",
  description:
    "Moves up to `limit` messages of the dead-letter topic back, oldest first, to `topic` or each to the topic it came from, as new messages with the time they had left. Each message is moved once, however often or concurrently this runs. Audited.",
  tags: ["dead-letters"],
  ...OPTIONAL_BODY,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  body: { content: { "application/json": { schema: REDRIVE_BODY } } },
  response: {
    200: json("What moved, and what is left.", REDRIVE_RESULT),
    ...errorResponses([
      ...TOPIC_ERRORS,
      "invalid_request_body",
      "topic_not_found",
      "payload_too_large",
      "storage_unavailable",
    ]),
  },
};

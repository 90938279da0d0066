// The route schemas of the message operations (docs/api.md, "Operations"): publish, batch publish, receive,
// receive by ID, acknowledge, and extend or release a lease. Documentation only (plugin.ts).
import {
  BATCH_ANSWER,
  CHANGE_VISIBILITY_BODY,
  DEFERRED,
  LEASE_PATH,
  MESSAGE_PATH,
  PUBLISHED,
  RECEIVE_HEADERS,
} from "../../api/messages.js";
import { GROUP_PATH, TOPIC_PATH } from "../../api/schema.js";
import { DEFAULT_CONTENT_TYPE, LIMITS } from "../../queue/limits.js";
import {
  ACCEPT_RULE,
  delivery,
  MESSAGE_HEADERS_RULE,
  LEASE_HEADERS,
  PART_PUBLISH_HEADERS,
  PAYLOAD,
  PUBLISH_HEADERS,
} from "./messages.js";
import {
  apiHeaders,
  errorResponses,
  GROUP_ERRORS,
  json,
  noContent,
  OPTIONAL_BODY,
  TIME,
  TOPIC_ERRORS,
} from "./shared.js";

const STORAGE = ["rate_limited", "too_many_requests_in_flight", "storage_unavailable"] as const;

export const PUBLISH = {
  operationId: "publishMessage",
  summary: "Publish a message",
  description: `The body is the message, with its \`Content-Type\` kept (none: delivered as ${DEFAULT_CONTENT_TYPE}). Larger than the configured maximum: 413. ${MESSAGE_HEADERS_RULE}`,
  tags: ["messages"],
  params: TOPIC_PATH,
  headers: apiHeaders(PUBLISH_HEADERS),
  body: { content: { "*/*": { schema: PAYLOAD } } },
  ...OPTIONAL_BODY,
  response: {
    201: {
      description: "Stored.",
      headers: { "Vqs-Message-Id": { type: "string", description: "The message's ID." } },
      ...PUBLISHED,
    },
    202: json(
      "Deferred during an outage of the region's store: kept by a neighbouring region, stored here once the store is back.",
      DEFERRED,
    ),
    ...errorResponses([
      ...TOPIC_ERRORS,
      "invalid_retention_seconds",
      "invalid_delay_seconds",
      "invalid_idempotency_key",
      "invalid_content_type",
      "invalid_message_header",
      "reserved_message_header",
      "message_headers_too_large",
      "topic_limit_reached",
      "payload_too_large",
      "topic_full",
      "storage_quota_exceeded",
      "deployment_limit_reached",
      ...STORAGE,
    ]),
  },
};

export const PUBLISH_BATCH = {
  operationId: "publishBatch",
  summary: "Publish a batch of messages",
  description: `A \`multipart/mixed\` body of 1 to ${LIMITS.batchMaxMessages} parts, each a message with its own \`Content-Type\`, \`Vqs-*\` publish headers (\`x-part-headers\`) and headers of its own, as a publish's; the request's \`traceparent\`, \`tracestate\` and \`baggage\` go to every part that carries none. A bad part fails alone: one result per part, in order. A large part refused before its end (413, 429, 503) refuses the whole batch with its code, nothing stored, the rest of the body unread; past the inline parts the gateway holds for all batches at once, 503 batch_busy with Retry-After.`,
  tags: ["messages"],
  params: TOPIC_PATH,
  headers: apiHeaders(),
  body: {
    content: {
      "multipart/mixed": {
        schema: {
          type: "array",
          minItems: 1,
          maxItems: LIMITS.batchMaxMessages,
          items: PAYLOAD,
          description: "One part per message: its payload, with the message's part headers.",
          "x-part-headers": PART_PUBLISH_HEADERS,
        },
      },
    },
  },
  response: {
    200: json("One result per part, in order.", BATCH_ANSWER),
    ...errorResponses([
      ...TOPIC_ERRORS,
      "invalid_batch",
      "payload_too_large",
      "rate_limited",
      "too_many_requests_in_flight",
      "large_body_busy",
      "batch_busy",
    ]),
  },
};

const LEASE_ERRORS = [
  ...GROUP_ERRORS,
  "unsupported_accept",
  "invalid_visibility_timeout",
  "invalid_max_concurrency",
  "group_limit_reached",
  "concurrency_limit_exceeded",
  ...STORAGE,
] as const;

export const RECEIVE = {
  operationId: "receiveMessages",
  summary: "Receive messages",
  description: `Leases up to Vqs-Max-Messages messages of the group. ${ACCEPT_RULE} With Vqs-Wait-Seconds, waits for a message (long polling); a client that hangs up leaves nothing leased.`,
  tags: ["messages"],
  params: GROUP_PATH,
  headers: apiHeaders({
    ...RECEIVE_HEADERS.properties,
    ...LEASE_HEADERS,
    "Vqs-Cursor-Fallback": { type: "string", description: "Sent by the client; ignored." },
  }),
  response: {
    200: delivery("Leased messages.", LIMITS.maxMessages.max),
    204: noContent("No message to hand out (after Vqs-Wait-Seconds)."),
    ...errorResponses([
      ...LEASE_ERRORS,
      "invalid_max_messages",
      "invalid_wait_seconds",
      "too_many_waiters",
    ]),
  },
};

export const RECEIVE_BY_ID = {
  operationId: "receiveMessageById",
  summary: "Receive a message by its ID",
  description: `Leases that one message to the group. ${ACCEPT_RULE} A message that would be delivered once more than its group's deadLetter.maxDeliveries: 410 message_dead_lettered. A large body while the gateway streams as many as it allows (VQS_MAX_LARGE_DOWNLOADS): 503 large_body_busy with Retry-After, nothing leased.`,
  tags: ["messages"],
  params: MESSAGE_PATH,
  headers: apiHeaders(LEASE_HEADERS),
  response: {
    200: delivery("The message, leased.", 1),
    ...errorResponses([
      ...LEASE_ERRORS,
      "message_not_found",
      "message_not_available",
      "message_duplicate",
      "message_already_acknowledged",
      "message_dead_lettered",
      "large_body_busy",
    ]),
  },
};

const HANDLE_ERRORS = [
  ...GROUP_ERRORS,
  "invalid_receipt_handle",
  "receipt_handle_stale",
  "storage_unavailable",
] as const;

export const ACKNOWLEDGE = {
  operationId: "acknowledgeMessage",
  summary: "Acknowledge a message",
  description:
    "Idempotent. A stale handle (the message was delivered again since, or its group was sought or deleted): 409.",
  tags: ["messages"],
  params: LEASE_PATH,
  headers: apiHeaders(),
  response: {
    204: noContent("Acknowledged."),
    ...errorResponses(HANDLE_ERRORS),
  },
};

/** PATCH, and POST .../visibility for clients that cannot send PATCH. */
export function changeVisibility(alternate: boolean): object {
  return {
    operationId: alternate ? "changeVisibilityAlternate" : "changeVisibility",
    summary: alternate ? "Extend or release a lease (POST)" : "Extend or release a lease",
    description: alternate
      ? "As the PATCH, for clients that cannot send PATCH."
      : "The lease now ends visibilityTimeoutSeconds from now; 0 releases the message at once. The body is JSON whatever its Content-Type.",
    tags: ["messages"],
    params: LEASE_PATH,
    headers: apiHeaders(),
    body: {
      content: {
        "application/json": {
          schema: CHANGE_VISIBILITY_BODY,
        },
      },
    },
    response: {
      200: json("The lease's new end.", {
        type: "object",
        required: ["visibilityDeadline"],
        properties: { visibilityDeadline: TIME },
      }),
      ...errorResponses([
        ...HANDLE_ERRORS,
        "invalid_request_body",
        "invalid_visibility_timeout",
        "message_already_acknowledged",
      ]),
    },
  };
}

// The message operations' definitions (TypeBox): the headers a publish and a receive take, which
// the routes check (src/http/validation.ts, `checkedHeaders`) and document, and what a delivered
// message says about its dead-letter origin.
import { Type, type Static } from "typebox";
import type { ErrorCode } from "../errors.js";
import { HEADER_VALUE_PATTERN, LIMITS } from "../queue/limits.js";
import { checked, GROUP_PARAM, NAME, ref, TIME, TOPIC_PARAM } from "./schema.js";

export const DEAD_LETTER_ORIGIN = Type.Object(
  {
    topic: NAME,
    consumerGroup: NAME,
    messageId: Type.String(),
    deliveryCount: Type.Integer({ minimum: 1 }),
  },
  { $id: "DeadLetterOrigin", description: "Where a dead-letter copy came from." },
);

/** Where a dead-letter copy came from (a message's `deadLetter`). */
export type DeadLetterOrigin = Static<typeof DEAD_LETTER_ORIGIN>;

/** An integer header within its bounds (absent: the default, when it has one). */
function intHeader(
  bounds: { min: number; max: number; default?: number },
  code: ErrorCode,
  description: string,
) {
  return Type.Optional(
    checked(
      Type.Integer({
        minimum: bounds.min,
        maximum: bounds.max,
        ...(bounds.default !== undefined ? { default: bounds.default } : {}),
        description,
      }),
      { code },
    ),
  );
}

const W3C = (description: string) => Type.Optional(Type.String({ description }));

/** A message's Content-Type (kept with it): one value of at most 255 visible ASCII characters. */
export const CONTENT_TYPE = checked(
  Type.String({
    maxLength: LIMITS.contentTypeMaxLength,
    pattern: HEADER_VALUE_PATTERN,
    description: "Kept with the message: visible ASCII (0x20-0x7E).",
  }),
  { code: "invalid_content_type" },
);

/** A publish's Content-Type (of a publish, and of each part of a batch), checked first. */
export const PUBLISH_CONTENT_TYPE = Type.Object({ "Content-Type": Type.Optional(CONTENT_TYPE) });

/** The per-message publish headers (of a publish, and of each part of a batch), checked in order. */
export const PUBLISH_HEADERS = Type.Object({
  "Vqs-Retention-Seconds": intHeader(
    LIMITS.retentionSeconds,
    "invalid_retention_seconds",
    "How long the message is kept (its time to live), in seconds.",
  ),
  "Vqs-Delay-Seconds": intHeader(
    LIMITS.delaySeconds,
    "invalid_delay_seconds",
    "Seconds before the message becomes visible; capped at the retention.",
  ),
  "Vqs-Idempotency-Key": Type.Optional(
    checked(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.idempotencyKeyMaxLength,
        pattern: HEADER_VALUE_PATTERN,
        description:
          "Visible ASCII (0x20-0x7E). A publish with the key of a live message stores nothing and answers that message's ID.",
      }),
      { code: "invalid_idempotency_key" },
    ),
  ),
  // Never refused: a malformed trace field is dropped (publish-input.ts).
  traceparent: W3C("W3C trace context, kept for pushes."),
  tracestate: W3C("W3C trace context, kept for pushes."),
  baggage: W3C("W3C baggage, kept for pushes."),
});

/** The headers of a receive that leases (receive, receive by ID), checked in order. */
export const LEASE_HEADERS = Type.Object({
  "Vqs-Visibility-Timeout-Seconds": intHeader(
    LIMITS.visibilityTimeoutSeconds,
    "invalid_visibility_timeout",
    "How long the lease lasts, in seconds.",
  ),
  "Vqs-Max-Concurrency": intHeader(
    LIMITS.maxConcurrency,
    "invalid_max_concurrency",
    "Refuse (429) when the group already has this many messages in flight.",
  ),
});

/** A receive's own headers, checked in order before the lease headers. */
export const RECEIVE_HEADERS = Type.Object({
  "Vqs-Wait-Seconds": intHeader(
    LIMITS.waitSeconds,
    "invalid_wait_seconds",
    "With none to hand out, wait up to this long for one.",
  ),
  "Vqs-Max-Messages": intHeader(
    LIMITS.maxMessages,
    "invalid_max_messages",
    "Messages to lease at most.",
  ),
});

/** The path of an operation on a lease (acknowledge, extend or release). */
export const LEASE_PATH = Type.Object({
  topic: TOPIC_PARAM,
  group: GROUP_PARAM,
  receiptHandle: Type.String({
    minLength: 1,
    description: "The receipt handle of the lease, as delivered (URL-safe).",
  }),
});

/** The path of a receive by ID. */
export const MESSAGE_PATH = Type.Object({
  topic: TOPIC_PARAM,
  group: GROUP_PARAM,
  messageId: Type.String({ minLength: 1, description: "A message ID as publish answered it." }),
});

/**
 * An extend or release: a JSON object with `visibilityTimeoutSeconds` (else 400
 * invalid_request_body), an integer within its bounds (else 400 invalid_visibility_timeout).
 */
export const CHANGE_VISIBILITY_BODY = checked(
  Type.Object({
    visibilityTimeoutSeconds: checked(
      Type.Integer({
        minimum: LIMITS.visibilityTimeoutSeconds.min,
        maximum: LIMITS.visibilityTimeoutSeconds.max,
        description: "Seconds from now; 0 releases.",
      }),
      { code: "invalid_visibility_timeout" },
    ),
  }),
  { code: "invalid_request_body" },
);

// Answers. `const` values are written as plain JSON Schema `const` (no `type`), as documented.

/** A publish's 201 (the message's ID is also the `Vqs-Message-Id` header). */
export const PUBLISHED = Type.Object({ messageId: Type.String() });
/** A publish's 202: deferred during an outage of the region's store. */
export const DEFERRED = Type.Object({ deferred: Type.Unsafe<true>({ const: true }) });
export type Published = Static<typeof PUBLISHED>;
export type Deferred = Static<typeof DEFERRED>;
/** What a publish answers: 201 `{messageId}`, or 202 `{deferred: true}`. */
export type PublishAnswer = Published | Deferred;

const PART_SENT = Type.Object({
  status: Type.Unsafe<"sent">({ const: "sent" }),
  messageId: Type.String(),
});
const PART_DEFERRED = Type.Object(
  { status: Type.Unsafe<"deferred">({ const: "deferred" }), messageId: Type.Null() },
  { description: "Deferred during an outage of the region's store, as a publish's 202." },
);
const PART_FAILED = Type.Object(
  {
    status: Type.Unsafe<"failed">({ const: "failed" }),
    statusCode: Type.Integer(),
    error: Type.String(),
    retryable: Type.Boolean({ description: "true for 429 and 5xx." }),
  },
  { description: "This part failed alone: the status and message a publish of it answers." },
);

/** One part's result in a batch publish's answer. */
export const BATCH_RESULT = Type.Unsafe<
  Static<typeof PART_SENT> | Static<typeof PART_DEFERRED> | Static<typeof PART_FAILED>
>({ oneOf: [PART_SENT, PART_DEFERRED, PART_FAILED] });
export type BatchResult = Static<typeof BATCH_RESULT>;

/** A batch publish's 200: one result per part, in order. */
export const BATCH_ANSWER = Type.Object({ results: Type.Array(BATCH_RESULT) });
export type BatchAnswer = Static<typeof BATCH_ANSWER>;

/** A delivered message: one line of an NDJSON delivery (multipart gives the same as headers). */
export const DELIVERED_MESSAGE = Type.Object(
  {
    messageId: Type.String(),
    receiptHandle: Type.String(),
    deliveryCount: Type.Integer({ minimum: 1 }),
    timestamp: TIME,
    expiresAt: TIME,
    contentType: Type.String(),
    // A dead-letter copy only (the document drops a description beside a $ref).
    deadLetter: Type.Optional(ref(DEAD_LETTER_ORIGIN)),
    headers: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: "object",
        additionalProperties: { type: "string" },
        description:
          "The message's own headers as published (names in lower case); absent when it has none.",
      }),
    ),
    body: Type.String({ contentEncoding: "base64", description: "The payload, base64." }),
  },
  { $id: "DeliveredMessage", description: "A delivered message: one line of an NDJSON delivery." },
);
export type DeliveredMessage = Static<typeof DELIVERED_MESSAGE>;

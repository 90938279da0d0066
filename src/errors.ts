// The error catalogue: one stable code, HTTP status and message per cause. Routes and the domain
// only throw `AppError`s; src/http/error-handler.ts renders every error in one place.
import { LIMITS } from "./queue/limits.js";

export const ERRORS = {
  invalid_topic_name: {
    status: 400,
    message: "Topic names must be 1-255 characters of A-Z, a-z, 0-9, '_' and '-'.",
  },
  invalid_consumer_group_name: {
    status: 400,
    message: "Consumer group names must be 1-255 characters of A-Z, a-z, 0-9, '_' and '-'.",
  },
  invalid_retention_seconds: {
    status: 400,
    message: "Vqs-Retention-Seconds must be an integer from 60 to 604800.",
  },
  invalid_delay_seconds: {
    status: 400,
    message: "Vqs-Delay-Seconds must be an integer from 0 to 604800.",
  },
  invalid_idempotency_key: {
    status: 400,
    message: "Vqs-Idempotency-Key must be 1 to 256 visible ASCII characters.",
  },
  invalid_content_type: {
    status: 400,
    message: "Content-Type must be a single value of at most 255 visible ASCII characters.",
  },
  invalid_message_header: {
    status: 400,
    message:
      "A message header must be a token name with a value of visible ASCII (0x20-0x7E) only.",
  },
  reserved_message_header: {
    status: 400,
    message:
      "Message headers named ce-* or Content-* (but Content-Type and Content-Length) are the service's own.",
  },
  message_headers_too_large: {
    status: 400,
    message: `A message may have at most ${LIMITS.messageHeaders.maxCount} headers of its own, of at most ${LIMITS.messageHeaders.maxBytes} bytes of names and values together.`,
  },
  invalid_namespace: {
    status: 400,
    message:
      "Vqs-Namespace must be team/project/environment[/deployment], each part percent-encoded.",
  },
  invalid_deployment_id: {
    status: 400,
    message: "Vqs-Deployment-Id must be 1 to 256 printable ASCII characters.",
  },
  invalid_max_messages: {
    status: 400,
    message: "Vqs-Max-Messages must be an integer from 1 to 10.",
  },
  invalid_visibility_timeout: {
    status: 400,
    message: "The visibility timeout must be an integer from 0 to 3600 seconds.",
  },
  invalid_cursor_fallback: {
    status: 400,
    message: "Vqs-Cursor-Fallback must be earliest or latest.",
  },
  invalid_wait_seconds: {
    status: 400,
    message: "Vqs-Wait-Seconds must be an integer from 0 to 20.",
  },
  invalid_max_concurrency: {
    status: 400,
    message: "Vqs-Max-Concurrency must be a positive integer.",
  },
  unsupported_accept: {
    status: 400,
    message: "The Accept header must include multipart/mixed or application/x-ndjson.",
  },
  invalid_query: {
    status: 400,
    message: "A query parameter is malformed.",
  },
  invalid_request_body: {
    status: 400,
    message:
      'The body must be JSON: {"visibilityTimeoutSeconds": <integer>} for a lease, an object of consumer settings for settings.',
  },
  invalid_url: {
    status: 400,
    message: "The URL is malformed (bad percent-encoding).",
  },
  invalid_batch: {
    status: 400,
    message: "A batch must be a multipart/mixed body of 1 to 100 parts.",
  },
  invalid_receipt_handle: {
    status: 400,
    message: "The receipt handle is malformed, forged, or belongs to another queue.",
  },
  invalid_topic_pattern: {
    status: 400,
    message:
      "A topic pattern is a topic name followed by one '*' (e.g. orders_*), and only the settings endpoints accept one.",
  },
  invalid_settings: {
    status: 400,
    message: "The consumer settings are malformed or out of bounds.",
  },
  missing_token: {
    status: 401,
    message: "An Authorization header with a Bearer token is required.",
  },
  invalid_token: {
    status: 401,
    message: "The bearer token is malformed, expired, or not signed by a trusted issuer.",
  },
  operator_only: {
    status: 403,
    message: "Only an operator's token may do this (list namespaces, or act in another namespace).",
  },
  tenant_not_allowed: {
    status: 403,
    message: "This service does not serve the team, project or environment of the token.",
  },
  topic_limit_reached: {
    status: 403,
    message:
      "This namespace has as many topics as the service allows; remove unused topics or ask the operator for a higher limit.",
  },
  group_limit_reached: {
    status: 403,
    message:
      "This namespace has as many consumer groups as the service allows; idle groups are removed after a while, or ask the operator for a higher limit.",
  },
  push_destination_not_allowed: {
    status: 403,
    message:
      "The push URL is outside the destinations the operator allows this namespace (VQS_PUSH_ALLOWED_URLS, VQS_TENANT_OVERRIDES).",
  },
  settings_limit_reached: {
    status: 403,
    message:
      "This namespace has as many consumer settings as the service allows; delete unused ones or ask the operator for a higher limit.",
  },
  topic_not_found: {
    status: 404,
    message: "No such topic in this namespace.",
  },
  group_not_found: {
    status: 404,
    message: "No such consumer group of this topic.",
  },
  message_not_found: {
    status: 404,
    message: "No such message in this topic, or it has expired.",
  },
  route_not_found: {
    status: 404,
    message: "No such endpoint.",
  },
  settings_not_found: {
    status: 404,
    message: "No consumer settings are stored for this topic or pattern and consumer group.",
  },
  message_not_available: {
    status: 409,
    message: "The message is leased by another consumer or not yet visible.",
  },
  message_duplicate: {
    status: 409,
    message: "This message ID belongs to a duplicate dropped by deduplication.",
  },
  receipt_handle_stale: {
    status: 409,
    message: "The receipt handle is stale: the message has since been delivered again.",
  },
  message_already_acknowledged: {
    status: 410,
    message: "This consumer group has already acknowledged the message.",
  },
  message_dead_lettered: {
    status: 410,
    message:
      "The message was delivered to this consumer group as often as its settings allow and has moved to the dead-letter topic.",
  },
  large_body_share_exceeded: {
    status: 403,
    message:
      "This namespace's large message bodies already use its share of the large-body store; wait for messages to expire or ask the operator for a larger share.",
  },
  request_timeout: {
    status: 408,
    message:
      "The request body arrived slower than the service's minimum upload rate (VQS_MIN_UPLOAD_BYTES_PER_SECOND).",
  },
  payload_too_large: {
    status: 413,
    message: "The message body is larger than the configured maximum.",
  },
  large_body_unsupported: {
    status: 413,
    message:
      "Bodies above the inline limit need nats-server 2.11 or newer with per-message TTL; this region's server cannot store them.",
  },
  concurrency_limit_exceeded: {
    status: 429,
    message: "The consumer group has reached Vqs-Max-Concurrency messages in flight.",
  },
  topic_full: {
    status: 429,
    message:
      "The topic holds as many bytes as the service allows (VQS_TOPIC_MAX_BYTES); space frees as messages expire. Retry after the Retry-After seconds.",
  },
  storage_quota_exceeded: {
    status: 429,
    message:
      "This namespace's topics hold as many bytes as the service allows (VQS_NAMESPACE_MAX_BYTES); space frees as messages expire. Retry after the Retry-After seconds.",
  },
  deployment_limit_reached: {
    status: 429,
    message:
      "This tenant has as many live deployments (holding topics or settings) as allowed (VQS_MAX_DEPLOYMENTS_PER_TENANT); retry after the Retry-After seconds.",
  },
  too_many_requests_in_flight: {
    status: 429,
    message:
      "This namespace has as many requests in flight on this gateway as it allows (VQS_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE).",
  },
  too_many_waiters: {
    status: 429,
    message:
      "This namespace has as many waiting receives on this gateway as it allows (VQS_MAX_WAITERS_PER_NAMESPACE); receive without Vqs-Wait-Seconds or retry later.",
  },
  delayed_publish_rate_limited: {
    status: 429,
    message:
      "This namespace has published as many delayed messages this second as the service allows in this region (VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE); retry after the Retry-After seconds.",
  },
  rate_limited: {
    status: 429,
    message:
      "This tenant has sent more requests (each part of a batch counts as one) or body bytes per second than the service allows in this region; retry after the Retry-After seconds.",
  },
  internal_error: {
    status: 500,
    message: "Internal server error.",
  },
  auth_unavailable: {
    status: 503,
    message: "The token issuer's keys cannot be fetched right now; retry later.",
  },
  storage_unavailable: {
    status: 503,
    message: "The message store (JetStream) is unavailable right now; retry later.",
  },
  large_body_busy: {
    status: 503,
    message:
      "This gateway is transferring as many large bodies as it allows (VQS_MAX_LARGE_UPLOADS uploads, VQS_MAX_LARGE_DOWNLOADS downloads); retry shortly.",
  },
  peek_busy: {
    status: 503,
    message:
      "This gateway is answering as many full-payload peeks as its memory allows at once; retry after the Retry-After seconds, or peek without payload=full.",
  },
  batch_busy: {
    status: 503,
    message:
      "This gateway holds as many batch parts in memory as it allows at once (all batch publishes together); retry the batch after the Retry-After seconds.",
  },
  large_body_not_deferred: {
    status: 503,
    message:
      "This region's message store is unavailable, and large bodies are not deferred to another region (they stay in their own region's store); retry later.",
  },
  large_body_store_unavailable: {
    status: 503,
    message:
      "The large-body store cannot be created: VQS_LARGE_BODY_STORE_BYTES is more than the NATS servers' JetStream storage; the operator must lower it.",
  },
  large_body_store_full: {
    status: 507,
    message:
      "The large-body store is full (VQS_LARGE_BODY_STORE_BYTES); space frees as messages expire, retry later.",
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra top-level fields of the JSON body (e.g. originalMessageId). */
  readonly extra: Readonly<Record<string, unknown>> | undefined;
  /** Seconds for a Retry-After header. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    options: {
      message?: string;
      cause?: unknown;
      extra?: Record<string, unknown>;
      retryAfterSeconds?: number;
    } = {},
  ) {
    super(options.message ?? ERRORS[code].message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.extra = options.extra;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

// Bounds and defaults of the v3 API in one place: the name, header and body limits every request
// is checked against, and the defaults a request that omits them gets.

export const LIMITS = {
  nameMaxLength: 255,
  retentionSeconds: { min: 60, max: 604_800, default: 86_400 },
  delaySeconds: { min: 0, max: 604_800, default: 0 },
  idempotencyKeyMaxLength: 256,
  /** A message's Content-Type, in characters. */
  contentTypeMaxLength: 255,
  deploymentIdMaxLength: 256,
  maxMessages: { min: 1, max: 10, default: 1 },
  waitSeconds: { min: 0, max: 20, default: 0 },
  visibilityTimeoutSeconds: { min: 0, max: 3600, default: 60 },
  maxConcurrency: { min: 1, max: 1_000_000 },
  batchMaxMessages: 100,
  /** A message's own headers (message-headers.ts): how many, and their names' and values' bytes. */
  messageHeaders: { maxCount: 32, maxBytes: 8192 },
  /** Messages one redrive request moves. */
  redriveLimit: { min: 1, max: 10_000, default: 1000 },
  /** Topics of one page of GET /api/v3/topics. */
  topicsPageLimit: { min: 1, max: 1000, default: 100 },
  /** Groups of one page of GET /api/v3/topic/{topic}/consumers. */
  groupsPageLimit: { min: 1, max: 1000, default: 100 },
  /** Messages one peek shows. */
  peekLimit: { min: 1, max: 100, default: 20 },
  /** Keys one busiest-keys answer lists. */
  busiestKeysLimit: { min: 1, max: 100, default: 20 },
} as const;

/**
 * How many deliveries a receive (or receive by ID) at the concurrency limit may pull, one at a
 * time, to find messages JetStream still counts that are not in flight (bounced, lease ran out).
 */
export const MAX_PULLS_AT_LIMIT = 32;

/**
 * Header values a publish keeps (Content-Type, the idempotency key) and that answers and pushes
 * write back into headers: visible ASCII, 0x20-0x7E. No control character (not even HTAB, which
 * HTTP allows), nothing above 0x7E: a value cut to latin1 or decoded as UTF-8 stays the same
 * bytes, and none can end a header line.
 */
export const HEADER_VALUE_PATTERN = "^[\\x20-\\x7e]*$";
const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN);

export function isHeaderValue(value: string): boolean {
  return HEADER_VALUE.test(value);
}

/** What a message without a Content-Type is delivered as. */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/**
 * A stored Content-Type as answers and pushes write it: the default when there is none, or when
 * it is not a header value (a message stored before publish refused those).
 */
export function deliveredContentType(stored: string | null): string {
  return stored !== null && isHeaderValue(stored) ? stored : DEFAULT_CONTENT_TYPE;
}

const NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

/** Topic and consumer group names: `^[A-Za-z0-9_\-]+$`, 1 to 255 characters. */
export function isValidName(name: string): boolean {
  return name.length <= LIMITS.nameMaxLength && NAME_PATTERN.test(name);
}

/**
 * A flow-control slot record nobody wrote for this long is forgotten by the store: longer than
 * any lease a holder in it can have (a receive's 1 h, a push's timeout of up to 1 h plus its
 * margin), since every lease change rewrites the record.
 */
export const FLOW_RECORD_TTL_MS = 3 * 3_600_000;

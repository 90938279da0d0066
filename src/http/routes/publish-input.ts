// The per-message publish headers, shared by single and batch publish.
import { AppError } from "../../errors.js";
import { LIMITS } from "../../queue/limits.js";
import type { PublishInput } from "../../queue/queue-service.js";
import { intHeader, stringHeader } from "../encoding/headers.js";

type Headers = Record<string, string | string[] | undefined>;

export function publishInput(headers: Headers, payload: Uint8Array): PublishInput {
  const contentType = headers["content-type"];
  if (Array.isArray(contentType) || (contentType !== undefined && contentType.length > 255)) {
    throw new AppError("invalid_content_type");
  }
  return {
    payload,
    contentType: contentType || null,
    retentionSeconds: intHeader(
      headers["vqs-retention-seconds"],
      LIMITS.retentionSeconds,
      LIMITS.retentionSeconds.default,
      "invalid_retention_seconds",
    ),
    delaySeconds: intHeader(
      headers["vqs-delay-seconds"],
      LIMITS.delaySeconds,
      LIMITS.delaySeconds.default,
      "invalid_delay_seconds",
    ),
    idempotencyKey: stringHeader(
      headers["vqs-idempotency-key"],
      LIMITS.idempotencyKeyMaxLength,
      "invalid_idempotency_key",
    ),
  };
}

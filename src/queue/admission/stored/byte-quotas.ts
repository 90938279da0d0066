// The byte quotas' decisions: a publish of `bytes` against what its topic, its namespace and its
// tenant hold (429 topic_full / storage_quota_exceeded, Retry-After 30 s: space frees as messages
// expire). The adapters count the bytes (src/nats/queue-state/usage/storage-quotas.ts reads stream
// info; tenant-admission.ts keeps the tenant's sum); only the comparison and the answer are here.
import { AppError } from "../../../errors.js";

/** What a client over a byte quota is told to wait: space frees as messages expire. */
export const QUOTA_RETRY_AFTER_SECONDS = 30;

/** Bytes held now by a publish's topic and namespace (uploads under way included), and limits. */
export interface NamespaceBytes {
  readonly topicUsed: number;
  /** 0: no limit. */
  readonly topicLimit: number;
  readonly namespaceUsed: number;
  /** 0: no limit. */
  readonly namespaceLimit: number;
}

/** Refuses `bytes` more that would take the topic or the namespace past its limit. */
export function admitNamespaceBytes(u: NamespaceBytes, bytes: number): void {
  if (u.topicLimit > 0 && u.topicUsed + bytes > u.topicLimit) {
    throw new AppError("topic_full", {
      retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS,
      extra: { limitBytes: u.topicLimit, usedBytes: u.topicUsed },
    });
  }
  if (u.namespaceLimit > 0 && u.namespaceUsed + bytes > u.namespaceLimit) {
    throw new AppError("storage_quota_exceeded", {
      retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS,
      extra: { limitBytes: u.namespaceLimit, usedBytes: u.namespaceUsed },
    });
  }
}

/** Refuses `bytes` more that would take the tenant, all its deployments together, past `limit`. */
export function admitTenantBytes(used: number, bytes: number, limit: number): void {
  if (limit > 0 && used + bytes > limit) {
    throw new AppError("storage_quota_exceeded", {
      message:
        "This tenant's topics, all its deployments together, hold as many bytes as the service allows (VQS_TENANT_MAX_BYTES); space frees as messages expire. Retry after the Retry-After seconds.",
      retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS,
      extra: { limitBytes: limit, usedBytes: used, scope: "tenant" },
    });
  }
}

/** The store itself refused a write to a topic over its hard limit (JetStream's max_bytes). */
export function topicFull(cause: unknown): AppError {
  return new AppError("topic_full", { cause, retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS });
}

// The one place errors become responses: {"error":{"code","message"}} with the catalogue's status.
// Fastify's own failures (body too large, unparseable input) map to catalogue codes; anything
// unexpected is logged and answered as a 500 without internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, isAppError } from "../errors.js";
import { refuseUnread } from "./plugins/linger-close.js";

function send(reply: FastifyReply, err: AppError): FastifyReply {
  if (err.retryAfterSeconds !== undefined)
    reply.header("retry-after", String(err.retryAfterSeconds));
  return reply
    .code(err.status)
    .type("application/json; charset=utf-8")
    .send({ error: { code: err.code, message: err.message }, ...err.extra });
}

function fromFastify(err: FastifyError): AppError | null {
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new AppError("payload_too_large", { cause: err });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new AppError("invalid_content_type", { cause: err });
    case "FST_ERR_BAD_URL":
      return new AppError("invalid_url", { cause: err });
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new AppError("invalid_request_body", { cause: err });
    default:
      return null;
  }
}

/** A declared body up to this size is cheaper to discard than the connection to reopen. */
const DISCARD_UNREAD_BYTES = 64 * 1024;

/**
 * A refusal of a request whose large body is still arriving (the auth hook, a name or a header
 * refused before the route reads it) ends the connection with a lingering close: without
 * `Connection: close`, Node's server would read and discard the whole declared body, up to
 * any size, to keep the connection. A small declared body (a refused small publish, a 429) is
 * discarded and the connection kept, so refusals stay cheap for a client that retries.
 */
function closeIfUnread(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete) return;
  const length = raw.headers["content-length"];
  if (
    raw.headers["transfer-encoding"] === undefined &&
    (length === undefined || Number(length) <= DISCARD_UNREAD_BYTES)
  )
    return;
  refuseUnread(request, reply);
}

/** For Fastify's `frameworkErrors`: failures before routing (a URL that cannot be decoded). */
export function frameworkError(err: FastifyError, _request: unknown, reply: FastifyReply): void {
  void send(reply, fromFastify(err) ?? new AppError("invalid_url", { cause: err }));
}

/** The 429s of tenant limits, counted by code (vqs_tenant_limit_refusals_total). */
export const TENANT_LIMIT_CODES: ReadonlySet<string> = new Set([
  "rate_limited",
  "topic_full",
  "storage_quota_exceeded",
  "too_many_requests_in_flight",
  "too_many_waiters",
  "concurrency_limit_exceeded",
  "delayed_publish_rate_limited",
  "deployment_limit_reached",
]);

export function installErrorHandling(
  app: FastifyInstance,
  onLimit: (code: string) => void = () => undefined,
): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    closeIfUnread(request, reply);
    // A request no route serves can only fail before the 404 handler runs (an unparseable
    // Content-Type, say): whatever its body, the answer to a request to nowhere is 404.
    if (request.is404 && !isAppError(err)) return send(reply, new AppError("route_not_found"));
    const appErr = isAppError(err) ? err : fromFastify(err);
    if (appErr) {
      if (TENANT_LIMIT_CODES.has(appErr.code)) onLimit(appErr.code);
      if (appErr.status >= 500) request.log.warn({ err: appErr.cause ?? appErr }, appErr.code);
      return send(reply, appErr);
    }
    request.log.error({ err }, "unhandled error");
    return send(reply, new AppError("internal_error", { cause: err }));
  });
  app.setNotFoundHandler((request, reply) => {
    closeIfUnread(request, reply);
    return send(reply, new AppError("route_not_found"));
  });
}

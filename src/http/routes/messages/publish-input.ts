// The per-message publish headers, shared by single and batch publish: checked against their
// definitions (src/api/messages.ts), the Content-Type first, then the message's own headers
// (src/queue/message-headers.ts). Every value kept is visible ASCII: a Content-Type, idempotency
// key or header of the message's with anything else is refused, a trace field dropped.
import { isHeaderValue, LIMITS } from "../../../queue/limits.js";
import type { TraceContext } from "../../../queue/broker.js";
import { messageHeaders } from "../../../queue/message-headers.js";
import type { PublishInput } from "../../../queue/use-cases/publish.js";
import { PUBLISH_CONTENT_TYPE, PUBLISH_HEADERS } from "../../../api/messages.js";
import { checkedHeaders } from "../../validation.js";

type Headers = Record<string, string | string[] | undefined>;

/**
 * `fallbackTrace`: the trace context of a part that carries none of its own (a batch's, from its
 * request: the client injects it there, not into the parts).
 */
export function publishInput(
  headers: Headers,
  payload: Uint8Array,
  fallbackTrace: TraceContext | null = null,
): PublishInput {
  const contentType = checkedHeaders(headers, PUBLISH_CONTENT_TYPE)["Content-Type"];
  const h = checkedHeaders(headers, PUBLISH_HEADERS);
  return {
    payload,
    contentType: contentType || null,
    retentionSeconds: h["Vqs-Retention-Seconds"] ?? LIMITS.retentionSeconds.default,
    delaySeconds: h["Vqs-Delay-Seconds"] ?? LIMITS.delaySeconds.default,
    idempotencyKey: h["Vqs-Idempotency-Key"] ?? null,
    trace: traceContext(headers) ?? fallbackTrace,
    headers: messageHeaders(headers),
  };
}

/** W3C traceparent: version-trace id-parent id-flags, lower-case hex; version ff is invalid. */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The trace context of a publish (the client injects it with OpenTelemetry), kept for a push.
 * Like OpenTelemetry's propagators, a malformed or oversized field is dropped, never an error.
 */
export function traceContext(headers: Headers): TraceContext | null {
  // Most publishes carry none: no closures made for them.
  if (headers.traceparent === undefined && headers.tracestate === undefined) {
    if (headers.baggage === undefined) return null;
  }
  const one = (name: string, max: number, valid: (v: string) => boolean) => {
    const v = headers[name];
    return typeof v === "string" && v.length <= max && isHeaderValue(v) && valid(v) ? v : undefined;
  };
  const traceparent = one("traceparent", 55, (v) => TRACEPARENT.test(v));
  const tracestate = one("tracestate", 512, (v) => v.trim() !== "");
  const baggage = one("baggage", 8192, (v) => v.trim() !== "");
  if (!traceparent && !tracestate && !baggage) return null;
  return {
    ...(traceparent ? { traceparent } : {}),
    ...(tracestate ? { tracestate } : {}),
    ...(baggage ? { baggage } : {}),
  };
}

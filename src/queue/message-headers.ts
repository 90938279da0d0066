// A message's own headers: which of a publish's headers (a request's, or a batch part's) belong
// to the message rather than to the API, HTTP or the transport, and the bounds they are held to.
// The client marks none (it puts `send`'s `headers` and its own `headers` option on the request,
// less `vqs-*`, Authorization and Content-Type), so the rule is by name. The same rule picks what
// a receive or a push writes back, so a stored value outside it is never written (docs/api.md,
// "Message headers").
import { AppError } from "../errors.js";
import { NO_HEADERS, type MessageHeaders } from "./broker.js";
import { isHeaderValue, LIMITS } from "./limits.js";

const { maxCount, maxBytes } = LIMITS.messageHeaders;

/**
 * Names that are HTTP's or the transport's (hop-by-hop, proxies, what an HTTP client adds by
 * itself), the API's (`vqs-*`, the trace context kept apart), or credentials: never a message's.
 */
const NOT_THE_MESSAGES = new Set([
  "host",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
  "via",
  "forwarded",
  "x-real-ip",
  "priority",
  "http2-settings",
  "accept",
  "user-agent",
  "origin",
  "referer",
  "cache-control",
  "pragma",
  "dnt",
  "upgrade-insecure-requests",
  "authorization",
  "cookie",
  "content-type",
  "content-length",
  "traceparent",
  "tracestate",
  "baggage",
]);
// `x-vercel-queue-*` is the service's own protocol space: a delivery writes trace context there,
// and clients send routing headers in it (the Workflow world's `x-vercel-queue-region`).
const NOT_THE_MESSAGES_PREFIXES = [
  "vqs-",
  "x-vercel-queue-",
  "accept-",
  "sec-",
  "x-forwarded-",
  "proxy-",
];

/** Names a delivery writes itself (a push's CloudEvent and trace headers, a part's Content-*). */
const RESERVED_PREFIXES = ["ce-", "content-"];

/**
 * An HTTP field name (RFC 9110 token), in lower case; not `__proto__`, which a plain object's
 * key cannot be (records of headers are plain objects, as Node's and the push's are).
 */
const NAME = /^(?!__proto__$)[!#$%&'*+.^_`|~0-9a-z-]+$/;

export type HeaderKind = "own" | "not-own" | "reserved";

/** What a (lower-case) header name of a publish is. */
export function headerKind(name: string): HeaderKind {
  if (NOT_THE_MESSAGES.has(name)) return "not-own";
  for (const p of NOT_THE_MESSAGES_PREFIXES) if (name.startsWith(p)) return "not-own";
  for (const p of RESERVED_PREFIXES) if (name.startsWith(p)) return "reserved";
  return "own";
}

/** Whether a stored header may be written into an answer or a push as it is. */
export function isWritableHeader(name: string, value: string): boolean {
  return NAME.test(name) && headerKind(name) === "own" && isHeaderValue(value);
}

type Headers = Record<string, string | string[] | undefined>;

/**
 * The message's own headers among a publish's (names in lower case, as Node and the batch
 * parser give them). Throws 400: `reserved_message_header` for a name a delivery writes itself,
 * `invalid_message_header` for a value that is not visible ASCII (or a name that is not a
 * token), `message_headers_too_large` past the bounds. Nothing is stored then.
 */
export function messageHeaders(headers: Headers): MessageHeaders {
  let out: Record<string, string> | null = null;
  let count = 0;
  let bytes = 0;
  for (const name in headers) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const kind = headerKind(name);
    if (kind === "not-own") continue;
    if (kind === "reserved") {
      throw new AppError("reserved_message_header", {
        message: `The header ${name} is the service's own (ce-* and Content-* other than Content-Type and Content-Length are what a delivery writes): send it under another name.`,
      });
    }
    // Given more than once: one value, as HTTP joins a field's lines.
    const value = typeof raw === "string" ? raw : raw.join(", ");
    if (!NAME.test(name) || !isHeaderValue(value)) {
      throw new AppError("invalid_message_header", {
        message: `The header ${NAME.test(name) ? name : "(a name that is not a token)"} must have a value of visible ASCII (0x20-0x7E) only.`,
      });
    }
    count++;
    bytes += name.length + value.length;
    if (count > maxCount || bytes > maxBytes) {
      throw new AppError("message_headers_too_large");
    }
    (out ??= {})[name] = value;
  }
  return out ?? NO_HEADERS;
}

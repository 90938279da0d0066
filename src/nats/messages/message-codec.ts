// How a queue message is stored in JetStream: the payload as the NATS payload, everything else
// in headers. Times come from the server's timestamp of the stored message, never a gateway clock.
import { headers, MsgHdrsImpl, type MsgHdrs } from "@nats-io/transport-node";
import { createHash } from "node:crypto";
import type { BodyRef } from "../../queue/bodies.js";
import {
  NO_HEADERS,
  type DeadLetterOrigin,
  type MessageHeaders,
  type NewMessage,
  type StoredMessage,
  type TraceContext,
} from "../../queue/broker.js";

export const H = {
  nonce: "Vqs-Nonce",
  contentType: "Vqs-Content-Type",
  retention: "Vqs-Retention",
  delay: "Vqs-Delay",
  /** On a moved delayed message: the sequence its ID was made from. */
  idSeq: "Vqs-Id-Seq",
  /** On a moved delayed message: the server time of the original publish (ms). */
  sentMs: "Vqs-Sent-Ms",
  deadLetterTopic: "Vqs-Dead-Letter-Topic",
  deadLetterGroup: "Vqs-Dead-Letter-Consumer-Group",
  deadLetterMessageId: "Vqs-Dead-Letter-Message-Id",
  deadLetterDeliveryCount: "Vqs-Dead-Letter-Delivery-Count",
  traceparent: "Vqs-Traceparent",
  tracestate: "Vqs-Tracestate",
  baggage: "Vqs-Baggage",
  /**
   * The message's own headers: `name<TAB>value<TAB>name<TAB>value…`. Names are tokens and values
   * visible ASCII, so neither holds a tab, and nothing grows as JSON's escapes would.
   */
  headers: "Vqs-Headers",
  /** A body kept in the body store (claim check): `<id>;<length>;<sha256 hex>`, empty payload. */
  body: "Vqs-Body",
} as const;

/** The headers every copy of a message keeps (a delayed message's moved copy, a relocated one). */
export const KEPT_HEADERS = [
  H.nonce,
  H.contentType,
  H.retention,
  H.traceparent,
  H.tracestate,
  H.baggage,
  H.headers,
  H.deadLetterTopic,
  H.deadLetterGroup,
  H.deadLetterMessageId,
  H.deadLetterDeliveryCount,
  H.body,
] as const;

/**
 * An idempotency key as a subject token and header value: base64url SHA-256 (43 characters of
 * `[A-Za-z0-9_-]`), so no user text reaches a subject.
 */
export function keyToken(idempotencyKey: string): string {
  return createHash("sha256").update(idempotencyKey).digest("base64url");
}

export function encodeHeaders(message: NewMessage, extra?: Record<string, string>): MsgHdrs {
  const r: Record<string, string[]> = {};
  put(r, H.nonce, message.nonce);
  if (message.contentType !== null) put(r, H.contentType, message.contentType);
  put(r, H.retention, String(message.retentionSeconds));
  if (message.delaySeconds > 0) put(r, H.delay, String(message.delaySeconds));
  if (message.trace?.traceparent) put(r, H.traceparent, message.trace.traceparent);
  if (message.trace?.tracestate) put(r, H.tracestate, message.trace.tracestate);
  if (message.trace?.baggage) put(r, H.baggage, message.trace.baggage);
  const own = encodeMessageHeaders(message.headers);
  if (own) put(r, H.headers, own);
  if (message.body) put(r, H.body, encodeBodyRef(message.body));
  const dl = message.deadLetter;
  if (dl) {
    put(r, H.deadLetterTopic, dl.topic);
    put(r, H.deadLetterGroup, dl.consumerGroup);
    put(r, H.deadLetterMessageId, dl.messageId);
    put(r, H.deadLetterDeliveryCount, String(dl.deliveryCount));
  }
  if (extra) for (const k in extra) put(r, k, extra[k]!);
  // The same headers (names, values, order) as `set` one by one, which costs, per header, two
  // key searches that each build an array and a closure, and a name check made of a spread
  // array: about 2 % of a publish's CPU for five headers. The names here are constants.
  return MsgHdrsImpl.fromRecord(r);
}

/** A header's value checked and trimmed as `MsgHdrs.set` does. */
function put(r: Record<string, string[]>, name: string, value: string): void {
  r[name] = [MsgHdrsImpl.validHeaderValue(value)];
}

/** The headers a delayed message keeps when it is copied to the ready subject. */
export function movedHeaders(parked: MsgHdrs, idSeq: number, publishedAtMs: number): MsgHdrs {
  const h = headers();
  for (const key of KEPT_HEADERS) {
    const v = parked.get(key);
    if (v) h.set(key, v);
  }
  h.set(H.idSeq, String(idSeq));
  h.set(H.sentMs, String(publishedAtMs));
  return h;
}

/** Decodes a stored message; null when it is not one of ours. */
export function decodeMessage(
  seq: number,
  serverTimeMs: number,
  hdrs: MsgHdrs | undefined,
  payload: Uint8Array,
): StoredMessage | null {
  const nonce = hdrs?.get(H.nonce);
  const retention = Number(hdrs?.get(H.retention));
  if (!hdrs || !nonce || !Number.isSafeInteger(retention)) return null;
  const delay = Number(hdrs.get(H.delay) || "0");
  const idSeq = Number(hdrs.get(H.idSeq) || seq);
  const publishedAtMs = Number(hdrs.get(H.sentMs) || serverTimeMs);
  return {
    idSeq,
    nonce,
    payload,
    contentType: hdrs.get(H.contentType) || null,
    publishedAtMs,
    expiresAtMs: publishedAtMs + retention * 1000,
    visibleAtMs: publishedAtMs + delay * 1000,
    trace: decodeTrace(hdrs),
    headers: decodeMessageHeaders(hdrs.get(H.headers)),
    deadLetter: decodeDeadLetter(hdrs),
    body: decodeBodyRef(hdrs.get(H.body)),
  };
}

function encodeBodyRef(ref: BodyRef): string {
  return `${ref.id};${ref.length};${ref.sha256}`;
}

/** The claim check of a message whose body is in the body store; null for an inline body. */
function decodeBodyRef(value: string): BodyRef | null {
  const m = /^([0-9a-f]{32});(\d{1,15});([0-9a-f]{64})$/.exec(value);
  return m ? { id: m[1]!, length: Number(m[2]), sha256: m[3]! } : null;
}

function decodeDeadLetter(hdrs: MsgHdrs): DeadLetterOrigin | null {
  const topic = hdrs.get(H.deadLetterTopic);
  const consumerGroup = hdrs.get(H.deadLetterGroup);
  const messageId = hdrs.get(H.deadLetterMessageId);
  const deliveryCount = Number(hdrs.get(H.deadLetterDeliveryCount));
  if (!topic || !consumerGroup || !messageId || !Number.isSafeInteger(deliveryCount)) return null;
  return { topic, consumerGroup, messageId, deliveryCount };
}

function decodeTrace(hdrs: MsgHdrs): TraceContext | null {
  const traceparent = hdrs.get(H.traceparent);
  const tracestate = hdrs.get(H.tracestate);
  const baggage = hdrs.get(H.baggage);
  if (!traceparent && !tracestate && !baggage) return null;
  return {
    ...(traceparent ? { traceparent } : {}),
    ...(tracestate ? { tracestate } : {}),
    ...(baggage ? { baggage } : {}),
  };
}

/** `name<TAB>value…`, or "" for none. */
function encodeMessageHeaders(h: MessageHeaders): string {
  let s = "";
  for (const name in h) s += (s ? "\t" : "") + name + "\t" + h[name]!;
  return s;
}

/**
 * The message's own headers as stored. A last empty value loses its tab to the header's trim
 * (an odd count): it reads as "". What answers write of them is checked again there.
 */
function decodeMessageHeaders(value: string): MessageHeaders {
  if (!value) return NO_HEADERS;
  const parts = value.split("\t");
  const out: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 2) out[parts[i]!] = parts[i + 1] ?? "";
  return out;
}

/** Milliseconds of an RFC 3339 timestamp with up to nanosecond digits (Nats-Time-Stamp). */
export function rfc3339ToMs(ts: string): number {
  const m = /^(.+T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return Date.parse(ts);
  const whole = Date.parse(`${m[1]!}${m[3]!}`);
  const frac = (m[2] ?? "").padEnd(3, "0").slice(0, 3);
  return whole + Number(frac);
}

/** Milliseconds of a nanosecond timestamp token (the ack reply subject's). */
export function nanosTokenToMs(token: string): number {
  return token.length > 6 ? Number(token.slice(0, -6)) : 0;
}

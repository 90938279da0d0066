// The push request: a binary-mode CloudEvent of type com.vercel.queue.v2beta, exactly what
// `@vercel/queue`'s handleCallback parses. Metadata in
// `ce-*` headers, the payload as the body; above the inline limit neither body nor receipt handle
// is sent, and the client leases the message by ID itself. Stored values are written into
// headers only when they are visible ASCII (publish refuses anything else; a message stored
// before it did gets the default Content-Type and no trace headers instead). The message's own
// headers are HTTP headers of the push, each only when a publish would keep it: none can be a
// CloudEvent, trace, Content-*, credential or transport header.
import { randomUUID } from "node:crypto";
import { deliveredContentType, isHeaderValue } from "../limits.js";
import { isWritableHeader } from "../message-headers.js";
import type { ReceivedMessage } from "../delivery/received-message.js";

export const CLOUD_EVENT_TYPE = "com.vercel.queue.v2beta";

/** What the client accepts in `ce-vqsregion` (it answers 400 to anything else). */
const CLIENT_REGION = /^[a-z]{2,5}[0-9]{1,2}$/;
/** The gateway's one region, tested once rather than per push. */
let lastRegion: { readonly region: string; readonly ok: boolean } | null = null;

function clientRegion(region: string): boolean {
  if (lastRegion?.region !== region) lastRegion = { region, ok: CLIENT_REGION.test(region) };
  return lastRegion.ok;
}

export interface PushEvent {
  readonly region: string;
  readonly topic: string;
  readonly group: string;
  readonly message: ReceivedMessage;
  /** When the push's lease ends (the client extends it before then). */
  readonly visibilityDeadline: Date;
  /** false: the payload is above the inline limit; no body, no receipt handle. */
  readonly inline: boolean;
  /** `Bearer` token for the destination. */
  readonly jwt: string;
  /** When the push is sent (ce-time), on the service's clock. */
  readonly sentAtMs: number;
}

export interface PushRequest {
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
}

export function pushRequest(e: PushEvent): PushRequest {
  const m = e.message;
  const headers: Record<string, string> = {
    "ce-specversion": "1.0",
    "ce-type": CLOUD_EVENT_TYPE,
    "ce-id": randomUUID(),
    "ce-source": `/vqs/${e.region}/topics/${e.topic}`,
    "ce-time": new Date(e.sentAtMs).toISOString(),
    "ce-vqsqueuename": e.topic,
    "ce-vqsconsumergroup": e.group,
    "ce-vqsmessageid": m.messageId,
    "ce-vqsdeliverycount": String(m.deliveryCount),
    "ce-vqscreatedat": m.publishedAt.toISOString(),
    "ce-vqsexpiresat": m.expiresAt.toISOString(),
    authorization: `Bearer ${e.jwt}`,
  };
  if (clientRegion(e.region)) headers["ce-vqsregion"] = e.region;
  const trace = m.trace;
  if (trace) {
    const { traceparent, tracestate, baggage } = trace;
    if (traceparent && isHeaderValue(traceparent)) {
      headers["x-vercel-queue-traceparent"] = traceparent;
    }
    if (tracestate && isHeaderValue(tracestate)) headers["x-vercel-queue-tracestate"] = tracestate;
    if (baggage && isHeaderValue(baggage)) headers["x-vercel-queue-baggage"] = baggage;
  }
  for (const name in m.headers) {
    const value = m.headers[name]!;
    // Never one of the push's own names (those are not a message's): nothing is overwritten.
    if (isWritableHeader(name, value)) headers[name] = value;
  }
  if (!e.inline) {
    // The client leases it by ID (receive by ID) and reads the payload from that answer.
    return { headers, body: new Uint8Array() };
  }
  headers["ce-vqsreceipthandle"] = m.receiptHandle;
  headers["ce-vqsvisibilitydeadline"] = e.visibilityDeadline.toISOString();
  headers["content-type"] = deliveredContentType(m.contentType);
  return { headers, body: m.payload };
}

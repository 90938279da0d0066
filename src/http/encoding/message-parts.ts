// Renders received messages as multipart/mixed or NDJSON. Payloads are written as they are (no
// copy, no encoding) into a streamed body; the boundary is random and checked against every
// inline payload, so any bytes, CRLFs and boundary-like text included, pass through unchanged.
// A large body is streamed from the body store as the client reads it; a body that fails its
// check mid-way fails the stream, so the response is cut off rather than ended. A part head
// holds only visible ASCII: a stored value that is not (a Content-Type stored before publish
// refused such values) is never written there, so none can end a header line. The message's own
// headers follow the API's in the part head (NDJSON: a `headers` object), each only when it is
// one a publish would keep (src/queue/message-headers.ts).
import type { DeliveredMessage } from "../../api/messages.js";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { deliveredContentType, isHeaderValue } from "../../queue/limits.js";
import type { ReceivedMessage } from "../../queue/delivery/received-message.js";
import type { MessageHeaders } from "../../queue/broker.js";
import { isWritableHeader } from "../../queue/message-headers.js";

/** The bytes of a message's large body (`ReceivedMessage.body`), read as they are needed. */
export type BodyOpener = (m: ReceivedMessage) => AsyncIterable<Uint8Array>;

const noBodies: BodyOpener = () => {
  throw new Error("a large body without a body store");
};

export interface RenderedBody {
  readonly contentType: string;
  readonly body: Readable;
}

function asBuffer(u8: Uint8Array): Buffer {
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

export function renderMultipart(
  messages: readonly ReceivedMessage[],
  openBody: BodyOpener = noBodies,
): RenderedBody {
  const payloads = messages.map((m) => asBuffer(m.payload));
  // A large body cannot be searched before it is sent: the boundary is 122 random bits drawn
  // after the body was stored, which its writer cannot have known, and every part says its
  // Content-Length.
  let boundary = `vqs-${randomUUID()}`;
  while (payloads.some((p) => p.includes(boundary))) boundary = `vqs-${randomUUID()}`;
  async function* parts(): AsyncGenerator<Buffer | Uint8Array> {
    for (const [i, m] of messages.entries()) {
      const head =
        `--${boundary}\r\n` +
        `Content-Type: ${deliveredContentType(m.contentType)}\r\n` +
        `Vqs-Message-Id: ${m.messageId}\r\n` +
        `Vqs-Receipt-Handle: ${m.receiptHandle}\r\n` +
        `Vqs-Delivery-Count: ${m.deliveryCount}\r\n` +
        `Vqs-Timestamp: ${m.publishedAt.toISOString()}\r\n` +
        `Vqs-Expires-At: ${m.expiresAt.toISOString()}\r\n` +
        deadLetterHeaders(m) +
        ownHeaders(m.headers) +
        `Content-Length: ${m.body ? m.body.length : payloads[i]!.length}\r\n\r\n`;
      yield Buffer.from(head, "latin1");
      if (m.body) yield* openBody(m);
      else yield payloads[i]!;
      yield CRLF;
    }
    yield Buffer.from(`--${boundary}--\r\n`);
  }
  return {
    contentType: `multipart/mixed; boundary=${boundary}`,
    body: Readable.from(parts(), { objectMode: false }),
  };
}

const CRLF = Buffer.from("\r\n");

/**
 * The four `Vqs-Dead-Letter-*` part headers of a dead-letter copy (names and IDs the gateway
 * wrote: ASCII; a stored origin that is not is left out).
 */
function deadLetterHeaders(m: ReceivedMessage): string {
  const dl = m.deadLetter;
  if (!dl || !isHeaderValue(dl.topic + dl.consumerGroup + dl.messageId)) return "";
  return (
    `Vqs-Dead-Letter-Topic: ${dl.topic}\r\n` +
    `Vqs-Dead-Letter-Consumer-Group: ${dl.consumerGroup}\r\n` +
    `Vqs-Dead-Letter-Message-Id: ${dl.messageId}\r\n` +
    `Vqs-Dead-Letter-Delivery-Count: ${dl.deliveryCount}\r\n`
  );
}

/** The message's own headers as part-head lines (none that a publish would not keep). */
function ownHeaders(headers: MessageHeaders): string {
  let lines = "";
  for (const name in headers) {
    const value = headers[name]!;
    if (isWritableHeader(name, value)) lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

/** The message's own headers for an NDJSON line; null when it has none to write. */
function ownHeaderObject(headers: MessageHeaders): Record<string, string> | null {
  let out: Record<string, string> | null = null;
  for (const name in headers) {
    const value = headers[name]!;
    if (isWritableHeader(name, value)) (out ??= {})[name] = value;
  }
  return out;
}

export function renderNdjson(
  messages: readonly ReceivedMessage[],
  openBody: BodyOpener = noBodies,
): RenderedBody {
  async function* lines(): AsyncGenerator<Buffer | string> {
    for (const m of messages) {
      const own = ownHeaderObject(m.headers);
      const fields: Omit<DeliveredMessage, "body"> = {
        messageId: m.messageId,
        receiptHandle: m.receiptHandle,
        deliveryCount: m.deliveryCount,
        timestamp: m.publishedAt.toISOString(),
        expiresAt: m.expiresAt.toISOString(),
        contentType: deliveredContentType(m.contentType),
        ...(m.deadLetter ? { deadLetter: m.deadLetter } : {}),
        ...(own ? { headers: own } : {}),
      };
      if (!m.body) {
        yield JSON.stringify({ ...fields, body: asBuffer(m.payload).toString("base64") }) + "\n";
        continue;
      }
      // The body is the last field, written as base64 while it is read: the line is the same
      // JSON as for an inline body, never held whole.
      yield JSON.stringify(fields).slice(0, -1) + ',"body":"';
      yield* base64Stream(openBody(m));
      yield '"}\n';
    }
  }
  return {
    contentType: "application/x-ndjson",
    body: Readable.from(lines(), { objectMode: false }),
  };
}

/** Base64 of a byte stream, a piece at a time (each piece a whole number of 3-byte groups). */
async function* base64Stream(source: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let rest = Buffer.alloc(0);
  for await (const piece of source) {
    const bytes = rest.length ? Buffer.concat([rest, piece]) : asBuffer(piece);
    const whole = bytes.length - (bytes.length % 3);
    if (whole > 0) yield bytes.subarray(0, whole).toString("base64");
    rest = Buffer.from(bytes.subarray(whole));
  }
  if (rest.length) yield rest.toString("base64");
}

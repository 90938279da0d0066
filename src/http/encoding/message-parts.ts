// Renders received messages as multipart/mixed or NDJSON. Payloads are written as they are (no
// copy, no encoding) into a streamed body; the boundary is random and checked against every
// payload, so any bytes, CRLFs and boundary-like text included, pass through unchanged.
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { ReceivedMessage } from "../../queue/queue-service.js";

export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

export interface RenderedBody {
  readonly contentType: string;
  readonly body: Readable;
}

function asBuffer(u8: Uint8Array): Buffer {
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

export function renderMultipart(messages: readonly ReceivedMessage[]): RenderedBody {
  const payloads = messages.map((m) => asBuffer(m.payload));
  let boundary = `vqs-${randomUUID()}`;
  while (payloads.some((p) => p.includes(boundary))) boundary = `vqs-${randomUUID()}`;
  const chunks: Buffer[] = [];
  messages.forEach((m, i) => {
    const head =
      `--${boundary}\r\n` +
      `Content-Type: ${m.contentType ?? DEFAULT_CONTENT_TYPE}\r\n` +
      `Vqs-Message-Id: ${m.messageId}\r\n` +
      `Vqs-Receipt-Handle: ${m.receiptHandle}\r\n` +
      `Vqs-Delivery-Count: ${m.deliveryCount}\r\n` +
      `Vqs-Timestamp: ${m.publishedAt.toISOString()}\r\n` +
      `Vqs-Expires-At: ${m.expiresAt.toISOString()}\r\n` +
      deadLetterHeaders(m) +
      `Content-Length: ${payloads[i]!.length}\r\n\r\n`;
    chunks.push(Buffer.from(head, "latin1"), payloads[i]!, Buffer.from("\r\n"));
  });
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    contentType: `multipart/mixed; boundary=${boundary}`,
    body: Readable.from(chunks, { objectMode: false }),
  };
}

/** The four `Vqs-Dead-Letter-*` part headers of a dead-letter copy (names and IDs: ASCII). */
function deadLetterHeaders(m: ReceivedMessage): string {
  const dl = m.deadLetter;
  if (!dl) return "";
  return (
    `Vqs-Dead-Letter-Topic: ${dl.topic}\r\n` +
    `Vqs-Dead-Letter-Consumer-Group: ${dl.consumerGroup}\r\n` +
    `Vqs-Dead-Letter-Message-Id: ${dl.messageId}\r\n` +
    `Vqs-Dead-Letter-Delivery-Count: ${dl.deliveryCount}\r\n`
  );
}

export function renderNdjson(messages: readonly ReceivedMessage[]): RenderedBody {
  const lines = messages.map(
    (m) =>
      JSON.stringify({
        messageId: m.messageId,
        receiptHandle: m.receiptHandle,
        deliveryCount: m.deliveryCount,
        timestamp: m.publishedAt.toISOString(),
        expiresAt: m.expiresAt.toISOString(),
        contentType: m.contentType ?? DEFAULT_CONTENT_TYPE,
        ...(m.deadLetter ? { deadLetter: m.deadLetter } : {}),
        body: asBuffer(m.payload).toString("base64"),
      }) + "\n",
  );
  return {
    contentType: "application/x-ndjson",
    body: Readable.from(
      lines.map((l) => Buffer.from(l)),
      { objectMode: false },
    ),
  };
}

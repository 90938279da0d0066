// What `vqs receive` and `vqs tail` print of a message: a block per message (receive: every
// field, the receipt handle to acknowledge it with), one line per message (tail), or the
// message as the API gave it (--json, body in base64).
import type { ReceivedMessage } from "../api-client.js";
import { formatBytes, type Colour, type Paint } from "../output.js";
import { preview } from "./preview.js";

/** Text output is cut to this width when stdout is not a terminal. */
export const DEFAULT_COLUMNS = 120;

export function payloadOf(m: ReceivedMessage): Buffer {
  return Buffer.from(m.body, "base64");
}

/** `dead letter of orders/billing (message m1_..., 3 deliveries)`, or null. */
export function deadLetterLine(m: Pick<ReceivedMessage, "deadLetter">): string | null {
  const dl = m.deadLetter;
  if (!dl) return null;
  const times = dl.deliveryCount === 1 ? "1 delivery" : `${dl.deliveryCount} deliveries`;
  return `dead letter of ${dl.topic}/${dl.consumerGroup} (message ${dl.messageId}, ${times})`;
}

/**
 * receive's block: a head line (ID, delivery count, timestamp, content type, size), the
 * dead-letter origin if any, the receipt handle (unless acknowledged), the payload preview.
 */
export function messageBlock(
  m: ReceivedMessage,
  o: { columns: number; paint: Paint; showHandle: boolean },
): string {
  const payload = payloadOf(m);
  const lines = messageHead(m, payload.length, o);
  const p = preview(payload, o.columns - 2);
  lines.push(`  ${p.kind === "text" ? p.text : o.paint("dim", p.text)}`);
  return lines.join("\n");
}

/**
 * The first lines of a received message's block (receive, and receive to files): ID, delivery
 * count, timestamp, content type and size; the dead-letter origin; the receipt handle.
 */
export function messageHead(
  m: Omit<ReceivedMessage, "body">,
  size: number,
  o: { paint: Paint; showHandle: boolean },
): string[] {
  const head = [
    o.paint("bold", m.messageId),
    `delivery ${m.deliveryCount}`,
    m.timestamp,
    m.contentType,
    formatBytes(size),
  ].join("  ");
  const lines = [head];
  const dl = deadLetterLine(m);
  if (dl) lines.push(`  ${o.paint("magenta", dl)}`);
  if (o.showHandle) lines.push(`  receipt handle  ${m.receiptHandle}`);
  return lines;
}

/** tail's line: timestamp, ID, content type, delivery count past 1, origin, payload preview. */
export function messageLine(m: ReceivedMessage, o: { columns: number; paint: Paint }): string {
  const fields: [Colour | undefined, string][] = [
    ["dim", m.timestamp],
    ["bold", m.messageId],
    [undefined, m.contentType],
  ];
  if (m.deliveryCount > 1) fields.push(["yellow", `delivery ${m.deliveryCount}`]);
  const dl = deadLetterLine(m);
  if (dl) fields.push(["magenta", dl]);
  // Colour codes take no room: the preview gets what the plain fields leave of the width.
  const used = fields.reduce((n, [, text]) => n + [...text].length + 2, 0);
  const p = preview(payloadOf(m), Math.max(20, o.columns - used));
  fields.push([p.kind === "text" ? undefined : "dim", p.text]);
  return fields.map(([colour, text]) => o.paint(colour, text)).join("  ");
}

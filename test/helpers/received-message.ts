// A message as the answer and push writers get it (test/unit/), and a rendered body read whole.
import type { ReceivedMessage } from "../../src/queue/delivery/received-message.js";

/** A delivered message, first delivery, with a short payload; `fields` replace any of it. */
export function receivedMessage(fields: Partial<ReceivedMessage> = {}): ReceivedMessage {
  return {
    messageId: "m1_AAAAAAAAAAAAAAAA",
    receiptHandle: "handle-1",
    deliveryCount: 1,
    body: null,
    visibilityDeadline: new Date(1_700_000_060_000),
    publishedAt: new Date(1_700_000_000_000),
    expiresAt: new Date(1_700_086_400_000),
    trace: null,
    headers: {},
    deadLetter: null,
    contentType: null,
    payload: Buffer.from("payload"),
    ...fields,
  };
}

/** Everything a rendered body streams. */
export async function collect(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

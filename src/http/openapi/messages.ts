// Schema pieces of the message operations: payloads, publish and lease headers, deliveries.
// Payloads are opaque bytes, so they are described by content types and headers, not JSON
// schemas. Multipart part headers and NDJSON lines have no standard place in OpenAPI 3.1 (3.2
// adds `itemEncoding` and `itemSchema`): they are given as the extensions `x-part-headers`
// (Header Objects by name) and `x-item-schema`.
import { DEFAULT_CONTENT_TYPE, LIMITS } from "../../queue/limits.js";
import {
  CONTENT_TYPE,
  DEAD_LETTER_ORIGIN,
  DELIVERED_MESSAGE,
  LEASE_HEADERS as LEASE_HEADER_DEFINITION,
  PUBLISH_HEADERS as PUBLISH_HEADER_DEFINITION,
} from "../../api/messages.js";
import { ref } from "./shared.js";

export const PAYLOAD = {
  type: "string",
  contentMediaType: "application/octet-stream",
  description: "The message payload: any bytes, stored and delivered unchanged.",
};

/** The per-message publish headers (of a publish, and of each part of a batch). */
export const PUBLISH_HEADERS = PUBLISH_HEADER_DEFINITION.properties;

/** The publish headers as Header Objects of a multipart part, Content-Type included. */
const PART_HEADERS: Record<string, object> = {
  "Content-Type": CONTENT_TYPE,
  ...PUBLISH_HEADERS,
};
export const PART_PUBLISH_HEADERS = Object.fromEntries(
  Object.entries(PART_HEADERS).map(([name, header]) => {
    const { description, ...schema } = header as { description?: string };
    return [name, { description, schema }];
  }),
);

/** The headers of a receive that leases (receive, receive by ID). */
export const LEASE_HEADERS = LEASE_HEADER_DEFINITION.properties;

/** What a publish keeps of its other headers (docs/api.md, "Message headers"). */
export const MESSAGE_HEADERS_RULE = `Every other header is the message's own, kept and delivered with it (part headers, NDJSON \`headers\`, push headers), except HTTP's and the transport's, \`Vqs-*\` and \`x-vercel-queue-*\`, the trace context, \`Content-Type\`, \`Content-Length\` and credentials; \`ce-*\` and other \`Content-*\` names are refused (reserved_message_header). Values visible ASCII (invalid_message_header); at most ${LIMITS.messageHeaders.maxCount} headers of ${LIMITS.messageHeaders.maxBytes} bytes together (message_headers_too_large).`;

export const ACCEPT_RULE =
  "`Accept` must include `multipart/mixed` (preferred when both are) or `application/x-ndjson`.";

/** The headers of each part of a multipart delivery. */
const DELIVERY_PART_HEADERS = Object.fromEntries(
  Object.entries({
    "Content-Type": `As published; ${DEFAULT_CONTENT_TYPE} when none was given.`,
    "Vqs-Message-Id": "The message's ID.",
    "Vqs-Receipt-Handle": "Acknowledges, extends or releases this delivery's lease.",
    "Vqs-Delivery-Count": "1 on the first delivery to the group.",
    "Vqs-Timestamp": "When the message was published (ISO 8601).",
    "Vqs-Expires-At": "When the message expires (ISO 8601).",
    "Vqs-Dead-Letter-Topic": "A dead-letter copy only: the topic it came from.",
    "Vqs-Dead-Letter-Consumer-Group": "A dead-letter copy only: the group it failed in.",
    "Vqs-Dead-Letter-Message-Id": "A dead-letter copy only: the original's ID.",
    "Vqs-Dead-Letter-Delivery-Count": "A dead-letter copy only: its deliveries to that group.",
  }).map(([name, description]) => [
    name,
    { description, schema: { type: name.endsWith("-Count") ? "integer" : "string" } },
  ]),
);

/** A 200 with leased messages, in the format the Accept header chose. */
export function delivery(description: string, maxItems: number): object {
  return {
    description,
    content: {
      "multipart/mixed": {
        schema: {
          type: "array",
          minItems: 1,
          maxItems,
          items: PAYLOAD,
          description:
            "One part per message: its payload, with the message's part headers, then the headers it was published with that are its own (names in lower case).",
          "x-part-headers": DELIVERY_PART_HEADERS,
        },
      },
      "application/x-ndjson": {
        schema: {
          type: "string",
          description: "One line per message, each a DeliveredMessage object.",
          "x-item-schema": ref("DeliveredMessage"),
        },
      },
    },
  };
}

export const MESSAGE_COMPONENTS = [DEAD_LETTER_ORIGIN, DELIVERED_MESSAGE];

// Writes received messages in the negotiated format (shared by receive and receive by ID).
import type { FastifyReply } from "fastify";
import type { ReceivedMessage } from "../../../queue/queue-service.js";
import type { ResponseFormat } from "../../encoding/accept.js";
import { renderMultipart, renderNdjson } from "../../encoding/message-parts.js";

export function sendMessages(
  reply: FastifyReply,
  format: ResponseFormat,
  messages: readonly ReceivedMessage[],
): FastifyReply {
  const rendered = format === "multipart" ? renderMultipart(messages) : renderNdjson(messages);
  return reply.code(200).type(rendered.contentType).send(rendered.body);
}

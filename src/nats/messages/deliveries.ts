// A message a consumer handed out, as the queue domain sees it: the stored message plus where it
// sits (stream sequence) and which delivery this is (delivery sequence and count), read from the
// ack reply subject. Used by pulls of receives and of the pusher alike.
import type { Msg } from "@nats-io/transport-node";
import type { Delivery } from "../../queue/broker.js";
import { parseAckSubject } from "./ack-subject.js";
import { decodeMessage, nanosTokenToMs } from "./message-codec.js";

/** The delivery a pulled message stands for; null when it is not a queue message. */
export function toDelivery(msg: Msg): Delivery | null {
  const info = msg.reply ? parseAckSubject(msg.reply) : null;
  const message = info
    ? decodeMessage(info.streamSeq, nanosTokenToMs(info.timestampToken), msg.headers, msg.data)
    : null;
  if (!info || !message) return null;
  return {
    message,
    streamSeq: info.streamSeq,
    deliverySeq: info.deliverySeq,
    deliveryCount: info.deliveryCount,
  };
}

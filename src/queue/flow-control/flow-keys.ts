// A message's flow-control key: the value of the header its group's `flowControl.key` names,
// hashed. Only the hash goes further (a record's name in the store, this gateway's maps), so a
// key's length and characters never reach a subject; SHA-256 cut to 128 bits keeps two keys of
// one group from sharing slots by chance.
import { createHash } from "node:crypto";
import type { StoredMessage } from "../broker.js";
import type { FlowControlSettings } from "../settings/consumer-settings.js";

/** The hash of the message's key, or null: the message has no key header and is not limited. */
export function flowKeyHash(message: StoredMessage, flow: FlowControlSettings): string | null {
  const value = message.headers[flow.key];
  if (value === undefined) return null;
  return createHash("sha256").update(value, "utf8").digest("hex").slice(0, 32);
}

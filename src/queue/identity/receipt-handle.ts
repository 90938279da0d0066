// Receipt handles: opaque, tamper-proof tokens naming one delivery of one message to one group.
// Layout (40 bytes, base64url): version | kind | stream seq (6) | delivery seq (6) |
// delivery count (4) | lease deadline in ms (6) | MAC (16). The MAC covers the bytes and the
// namespace, topic and group, so a handle is only valid where it was issued, and, from a group's
// first reset on (seek, or the group deleted), the group's epoch: a handle of an earlier epoch
// is recognised as stale.
import { timingSafeEqual } from "node:crypto";
import { mac } from "./secret-keys.js";
import type { GroupAddress } from "../namespace.js";

export interface Lease {
  /** "group": a delivery through the group's cursor; "id": a lease taken by receive by ID. */
  readonly kind: "group" | "id";
  /** Sequence of the message in the topic log. */
  readonly streamSeq: number;
  /** The group's delivery sequence of this delivery (for "id": the lease's random ID). */
  readonly deliverySeq: number;
  /** How many times the group has been handed the message, this delivery included. */
  readonly deliveryCount: number;
  /** When the lease ends unless extended (ms since the epoch). */
  readonly deadlineMs: number;
}

const VERSION = 1;
const KIND_GROUP = 0;
const KIND_ID = 1;
const BODY = 2 + 6 + 6 + 4 + 6;
const TOTAL = BODY + 16;
const ENCODED_LENGTH = Math.ceil((TOTAL * 4) / 3);

/** Earlier epochs a handle is still recognised in (as stale rather than foreign). */
const EPOCHS_RECOGNISED = 4;

function scope(group: GroupAddress, epoch: number): string[] {
  const s = [group.namespace.key, group.topic, group.group];
  return epoch === 0 ? s : [...s, `epoch ${epoch}`];
}

export function encodeReceiptHandle(
  key: Buffer,
  group: GroupAddress,
  lease: Lease,
  epoch = 0,
): string {
  const buf = Buffer.allocUnsafe(TOTAL);
  buf[0] = VERSION;
  buf[1] = lease.kind === "id" ? KIND_ID : KIND_GROUP;
  buf.writeUIntBE(lease.streamSeq, 2, 6);
  buf.writeUIntBE(lease.deliverySeq, 8, 6);
  buf.writeUInt32BE(lease.deliveryCount, 14);
  buf.writeUIntBE(Math.max(0, Math.floor(lease.deadlineMs)), 18, 6);
  mac(key, [buf.subarray(0, BODY), ...scope(group, epoch)]).copy(buf, BODY);
  return buf.toString("base64url");
}

/**
 * Decodes a handle issued for this group in its current epoch; "stale" when it was issued in
 * one of the group's earlier epochs (before a seek); null when malformed, forged or foreign.
 */
export function decodeReceiptHandle(
  key: Buffer,
  group: GroupAddress,
  handle: string,
  epoch = 0,
): Lease | "stale" | null {
  if (handle.length !== ENCODED_LENGTH || !/^[A-Za-z0-9_-]+$/.test(handle)) return null;
  const buf = Buffer.from(handle, "base64url");
  if (buf.length !== TOTAL || buf[0] !== VERSION) return null;
  if (buf[1] !== KIND_GROUP && buf[1] !== KIND_ID) return null;
  const signed = (e: number) =>
    timingSafeEqual(mac(key, [buf.subarray(0, BODY), ...scope(group, e)]), buf.subarray(BODY));
  if (!signed(epoch)) {
    for (let e = epoch - 1; e >= Math.max(0, epoch - EPOCHS_RECOGNISED); e--) {
      if (signed(e)) return "stale";
    }
    return null;
  }
  const lease: Lease = {
    kind: buf[1] === KIND_ID ? "id" : "group",
    streamSeq: buf.readUIntBE(2, 6),
    deliverySeq: buf.readUIntBE(8, 6),
    deliveryCount: buf.readUInt32BE(14),
    deadlineMs: buf.readUIntBE(18, 6),
  };
  return lease.streamSeq > 0 && lease.deliverySeq > 0 && lease.deliveryCount > 0 ? lease : null;
}

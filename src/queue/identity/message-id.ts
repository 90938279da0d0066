// Message IDs are self-locating, so receive by ID needs no index:
//   stored message:  "m" <sequence in the topic log, base 36> "_" <random nonce stored with it>
//   dropped duplicate: "x" <original's sequence, base 36> "_" <random> "_" <MAC>
// The nonce makes an ID unguessable and tells a recreated topic's message apart from an old one
// with the same sequence; the MAC makes duplicate IDs unforgeable without any stored state.
import { randomBytes, randomFillSync, timingSafeEqual } from "node:crypto";
import { mac } from "./secret-keys.js";
import type { TopicAddress } from "../namespace.js";

export type ParsedMessageId =
  { kind: "stored"; seq: number; nonce: string } | { kind: "duplicate"; originalSeq: number };

const STORED = /^m([0-9a-z]{1,11})_([A-Za-z0-9_-]{16})$/;
const DUPLICATE = /^x([0-9a-z]{1,11})_([A-Za-z0-9_-]{11})_([A-Za-z0-9_-]{16})$/;

const NONCE_BYTES = 12;
const NONCE_CHARS = 16; // 12 bytes in base64url, no padding (12 is a multiple of 3)
/** Random bytes for 256 nonces, drawn at once: one call into the CSPRNG costs as much as the
 * rest of a nonce (measured: it was 7 % of a publish's gateway CPU), as with randomUUID's. They
 * are encoded at once too: 12 bytes are 16 whole base64url characters, so the pool's encoding is
 * its nonces' encodings one after the other, and a nonce is a slice of it (no call per nonce). */
const noncePool = Buffer.alloc(NONCE_BYTES * 256);
let nonceText = "";
let nonceAt = nonceText.length;

/** 12 fresh random bytes, base64url (16 characters); none is ever handed out twice. */
export function newNonce(): string {
  if (nonceAt === nonceText.length) {
    randomFillSync(noncePool);
    nonceText = noncePool.toString("base64url");
    nonceAt = 0;
  }
  const start = nonceAt;
  nonceAt += NONCE_CHARS;
  return nonceText.slice(start, nonceAt);
}

export function storedMessageId(seq: number, nonce: string): string {
  return `m${seq.toString(36)}_${nonce}`;
}

function duplicateMac(key: Buffer, topic: TopicAddress, seq36: string, rand: string): string {
  return mac(key, [topic.namespace.key, topic.topic, seq36, rand], 12).toString("base64url");
}

export function duplicateMessageId(key: Buffer, topic: TopicAddress, originalSeq: number): string {
  const seq36 = originalSeq.toString(36);
  const rand = randomBytes(8).toString("base64url");
  return `x${seq36}_${rand}_${duplicateMac(key, topic, seq36, rand)}`;
}

/** Parses an ID of this topic; null when it is malformed, forged or of another topic. */
export function parseMessageId(
  key: Buffer,
  topic: TopicAddress,
  id: string,
): ParsedMessageId | null {
  let m = STORED.exec(id);
  if (m) {
    const seq = parseInt(m[1]!, 36);
    return Number.isSafeInteger(seq) && seq > 0 ? { kind: "stored", seq, nonce: m[2]! } : null;
  }
  m = DUPLICATE.exec(id);
  if (m) {
    const [, seq36, rand, given] = m as unknown as [string, string, string, string];
    const expected = Buffer.from(duplicateMac(key, topic, seq36, rand));
    const actual = Buffer.from(given);
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    const originalSeq = parseInt(seq36, 36);
    return Number.isSafeInteger(originalSeq) && originalSeq > 0
      ? { kind: "duplicate", originalSeq }
      : null;
  }
  return null;
}

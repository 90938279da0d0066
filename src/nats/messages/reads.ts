// Reads of one stored message, by sequence or last-by-subject; null when there is none. Direct Get
// (`allow_direct`) is answered by any replica, including a follower that has not caught up: it
// can say "no message" for a message already acknowledged to its publisher, or show an older
// last message of a subject. The message-get API is answered by the stream leader, which has
// applied every acknowledged write. Which read each caller uses, and why a stale answer is
// harmless where Direct Get stays: docs/architecture.md, "Reads that decide".
import { JetStreamApiCodes, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { isApiError } from "../core/errors.js";

export type MessageQuery = { seq: number } | { last_by_subj: string };

/** The first message on `next_by_subj` at or after `seq` (the leader's read only). */
export type NextQuery = { seq: number; next_by_subj: string };

/** Any replica's view: cheap, possibly behind. */
export async function directGet(
  jsm: JetStreamManager,
  stream: string,
  query: MessageQuery,
): Promise<StoredMsg | null> {
  try {
    return await jsm.direct.getMessage(stream, query);
  } catch (err) {
    if (isApiError(err, JetStreamApiCodes.NoMessageFound)) return null;
    throw err;
  }
}

/**
 * The stream leader's view: every write acknowledged before the call is seen. A missing stream
 * fails with StreamNotFound (Direct Get would time out).
 */
export function leaderGet(
  jsm: JetStreamManager,
  stream: string,
  query: MessageQuery | NextQuery,
): Promise<StoredMsg | null> {
  return jsm.streams.getMessage(stream, query);
}

/**
 * A message by sequence that, once stored, never changes: a replica that has it answers right,
 * so Direct Get is asked first and only its "no message" is confirmed with the leader.
 */
export async function currentGet(
  jsm: JetStreamManager,
  stream: string,
  query: { seq: number },
): Promise<StoredMsg | null> {
  return (await directGet(jsm, stream, query)) ?? leaderGet(jsm, stream, query);
}

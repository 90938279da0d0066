// Direct Get of one stored message by sequence or last-by-subject; null when there is none.
import { JetStreamApiCodes, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { isApiError } from "./errors.js";

export async function directGet(
  jsm: JetStreamManager,
  stream: string,
  query: { seq: number } | { last_by_subj: string },
): Promise<StoredMsg | null> {
  try {
    return await jsm.direct.getMessage(stream, query);
  } catch (err) {
    if (isApiError(err, JetStreamApiCodes.NoMessageFound)) return null;
    throw err;
  }
}

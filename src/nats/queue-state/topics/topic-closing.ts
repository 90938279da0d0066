// Removing a topic's stream without losing a publish. JetStream cannot delete a stream on a
// condition, and a publish stored between a check and the delete would be lost after its 201. So
// a remover first moves the stream off its subjects onto `vqs._closing.<ns>.<id>.<ms>` (from then
// on a publish finds no stream: "no responders"), looks again, and deletes only if nothing
// arrived; otherwise it puts the subjects back. A publisher that meets a closing stream waits for
// the outcome (gone: it creates the topic again; reopened: it publishes), so its message is
// stored either way. A close left behind by a remover that died is undone by whoever finds it
// older than CLOSE_STALE_MS, and a remover slower than half of that gives up instead of deleting.
import type { JetStreamManager, StreamConfig, StreamInfo } from "@nats-io/jetstream";

const CLOSING = "vqs._closing.";

/** A close this old was left behind: anyone may put the subjects back. */
export const CLOSE_STALE_MS = 30_000;

/** A topic stream's subjects: `vqs.<namespace hash>.<topic hash>.>` (naming.ts). */
const TOPIC_SUBJECTS = /^vqs\.([0-9a-f]{16})\.([0-9a-f]{32})\.>$/;
const CLOSING_SUBJECT = /^vqs\._closing\.([0-9a-f]{16})\.([0-9a-f]{32})\.([0-9]+)$/;

/** When the stream was moved off its subjects (server ms), or null when it is not closing. */
export function closedAt(config: Pick<StreamConfig, "subjects">): number | null {
  const subject = config.subjects?.length === 1 ? config.subjects[0] : undefined;
  if (!subject?.startsWith(CLOSING)) return null;
  const m = CLOSING_SUBJECT.exec(subject);
  return m ? Number(m[3]) : 0; // an earlier version's close (`vqs._closing.<stream>`): stale
}

/** The topic's own subjects of a closing stream (null for an earlier version's close). */
export function openSubjects(config: Pick<StreamConfig, "subjects">): string[] | null {
  const m = CLOSING_SUBJECT.exec(config.subjects?.[0] ?? "");
  return m ? [`vqs.${m[1]}.${m[2]}.>`] : null;
}

/**
 * Moves the stream off its subjects, checks that nothing arrived since `seen` and that `still`
 * holds, runs `beforeDelete` (while closed: no message can arrive, and no topic made again under
 * the name exists yet), and deletes it. True when deleted; false when it was put back (something
 * arrived, the check failed, or the remover took too long). A `beforeDelete` that throws puts
 * the subjects back too, and the error is thrown.
 */
export async function closeAndDelete(
  jsm: JetStreamManager,
  seen: StreamInfo,
  now: () => number,
  still: () => Promise<boolean> = () => Promise.resolve(true),
  beforeDelete: () => Promise<void> = () => Promise.resolve(),
): Promise<boolean> {
  const { name } = seen.config;
  const subjects = seen.config.subjects ?? [];
  const m = TOPIC_SUBJECTS.exec(subjects.length === 1 ? subjects[0]! : "");
  if (!m) return false; // not a topic's stream as this version makes them
  // The same stream, not one made again under its name since `seen` (another remover deleted
  // that one and a publish made the topic again, perhaps with as many messages).
  const same = (info: StreamInfo) => info.created === seen.created;
  if (!same(await jsm.streams.info(name))) return false;
  const at = Math.floor(now());
  const closing = `${CLOSING}${m[1]}.${m[2]}.${at}`;
  await jsm.streams.update(name, { ...seen.config, subjects: [closing] });
  const info = await jsm.streams.info(name);
  // Messages only leave (they expire) unless one arrived, which moves the last sequence.
  const unchanged = (i: StreamInfo) =>
    same(i) &&
    i.state.last_seq === seen.state.last_seq &&
    i.config.subjects?.length === 1 &&
    i.config.subjects[0] === closing &&
    now() - at < CLOSE_STALE_MS / 2;
  if (unchanged(info) && (await still())) {
    try {
      await beforeDelete();
    } catch (err) {
      await jsm.streams.update(name, { ...info.config, subjects });
      throw err;
    }
    // Looked at again after beforeDelete's round trips: a remover that took too long, whose
    // close another gateway found stale and undid, gives up rather than delete what arrived.
    const after = await jsm.streams.info(name);
    if (unchanged(after)) {
      await jsm.streams.delete(name);
      return true;
    }
    if (after.config.subjects?.[0] === closing) {
      await jsm.streams.update(name, { ...after.config, subjects });
    }
    return false;
  }
  // A publish got in before the move, the topic is in use after all, or the stream is one made
  // again since `seen`: open it again (if it is still this remover's close).
  if (info.config.subjects?.[0] === closing) {
    await jsm.streams.update(name, { ...info.config, subjects });
  }
  return false;
}

/** Puts back the topic's subjects (a close left behind by a remover that died). */
export async function reopen(
  jsm: JetStreamManager,
  info: StreamInfo,
  subjects: string[],
): Promise<void> {
  await jsm.streams.update(info.config.name, { ...info.config, subjects });
}

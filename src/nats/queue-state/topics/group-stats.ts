// Per topic and consumer group figures for the gauges, read from JetStream (so every gateway of a
// region reports the same values): backlog (not yet delivered), in flight (delivered, not yet
// acknowledged) and the age of the oldest message the group has not acknowledged.
import type { ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import { namespaceLabel } from "../../../queue/namespace.js";
import type { GroupStat } from "../../../metrics.js";
import { H, rfc3339ToMs } from "../../messages/message-codec.js";

interface StreamIdentity {
  region: string;
  namespace: string;
  topic: string;
}

/** "team/project/environment[/deployment]" from the namespace's canonical JSON. */
function identity(description: string | undefined): StreamIdentity | null {
  try {
    const d = JSON.parse(description ?? "") as Partial<StreamIdentity> & { vqs?: number };
    return d.vqs === 1 && d.region && d.namespace && d.topic ? (d as StreamIdentity) : null;
  } catch {
    return null;
  }
}

function groupName(c: ConsumerInfo): string | null {
  try {
    return (JSON.parse(c.config.description ?? "") as { group?: string }).group ?? null;
  } catch {
    return null;
  }
}

export interface GroupStatsResult {
  readonly stats: GroupStat[];
  /** True when `max` cut the list. */
  readonly truncated: boolean;
}

export async function readGroupStats(
  jsm: JetStreamManager,
  region: string,
  max: number,
  now: () => number,
): Promise<GroupStatsResult> {
  const stats: GroupStat[] = [];
  for await (const stream of jsm.streams.list()) {
    // Topics without consumer groups need no consumer listing (most of a large region's topics
    // at any moment: with 10,000 topics the per-stream listing made a scrape take seconds).
    if (stream.state.consumer_count === 0) continue;
    const id = stream.config.name.startsWith("VQS_") ? identity(stream.config.description) : null;
    if (!id || id.region !== region) continue;
    for await (const c of jsm.consumers.list(stream.config.name)) {
      const group = groupName(c);
      if (group === null) continue;
      if (stats.length >= max) return { stats, truncated: true };
      stats.push({
        namespace: namespaceLabel({ key: id.namespace }),
        topic: id.topic,
        group,
        backlog: c.num_pending,
        inFlight: c.num_ack_pending,
        oldestAgeSeconds: await oldestUnackedAge(jsm, stream.config.name, c, now),
      });
    }
  }
  return { stats, truncated: false };
}

/** Age of the first message after the group's ack floor on its subject; 0 when there is none. */
async function oldestUnackedAge(
  jsm: JetStreamManager,
  stream: string,
  c: ConsumerInfo,
  now: () => number,
): Promise<number> {
  if (c.num_pending + c.num_ack_pending === 0 || !c.config.filter_subject) return 0;
  const m = await jsm.direct
    .getMessage(stream, { seq: c.ack_floor.stream_seq + 1, next_by_subj: c.config.filter_subject })
    .catch(() => null);
  if (!m) return 0;
  const sent = Number(m.header.get(H.sentMs) || rfc3339ToMs(m.timestamp));
  return Math.max(0, (now() - sent) / 1000);
}

// After a run: what the topic's stream holds, read straight from JetStream (not through a
// gateway): every message on the ready and parked subjects with its body, the forward pointers
// of moved delayed messages, and each consumer group's ack floor and counters. The checker uses it
// to tell a lost message that is still stored (late, or skipped past the ack floor) from one gone.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import {
  groupNames,
  TIMER_STREAM,
  timerConsumer,
  timerShard,
  topicNames,
} from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { TEAM_A } from "../../helpers/issuer.js";

export const REGION = "iad1";

export interface StoredCopy {
  readonly seq: number;
  /** The sequence its message ID names (a moved delayed message keeps the parked one's). */
  readonly idSeq: number;
  readonly subject: "ready" | "parked";
  readonly body: string;
}

export interface GroupState {
  /** Every message up to this stream sequence is acknowledged. */
  readonly ackFloor: number;
  /** The highest stream sequence handed out. */
  readonly delivered: number;
  readonly pending: number;
  readonly ackPending: number;
  readonly redelivered: number;
}

export interface Inspection {
  readonly stream: string;
  readonly leader: string | null;
  readonly replicas: readonly { name: string; current: boolean; lag: number }[];
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly stored: readonly StoredCopy[];
  /** Parked sequence -> the sequence of its copy on the ready subject. */
  readonly moved: Readonly<Record<number, number>>;
  readonly groups: Readonly<Record<string, GroupState | null>>;
  /** For messages still parked (never moved): the sequences of their pending move timers. */
  readonly timers: Readonly<Record<number, readonly number[]>>;
  readonly scheduler: GroupState | null;
}

export function streamOf(topic: string): string {
  return topicNames(REGION, { namespace: namespace(), topic }).stream;
}

function namespace() {
  return makeNamespace(
    TEAM_A.owner_id as string,
    TEAM_A.project_id as string,
    TEAM_A.environment as string,
    null,
  );
}

export async function inspectTopic(
  urls: readonly string[],
  topic: string,
  groups: readonly string[],
): Promise<Inspection> {
  const names = topicNames(REGION, { namespace: namespace(), topic });
  const nc = await connect({ servers: [...urls], timeout: 10_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    const info = await jsm.streams.info(names.stream);
    const stored: StoredCopy[] = [];
    const moved: Record<number, number> = {};
    const js = jetstream(nc, { timeout: 10_000 });
    const reader = await js.consumers.get(names.stream, { filter_subjects: names.all });
    let last = 0;
    while (last < info.state.last_seq) {
      let n = 0;
      const batch = await reader.fetch({ max_messages: 1000, expires: 2000 });
      for await (const m of batch) {
        n++;
        last = m.seq;
        if (m.subject === names.ready || m.subject === names.delayed) {
          stored.push({
            seq: m.seq,
            idSeq: Number(m.headers?.get("Vqs-Id-Seq") || m.seq),
            subject: m.subject === names.ready ? "ready" : "parked",
            body: m.string(),
          });
        } else if (m.subject.startsWith(`${names.forwardPrefix}.`)) {
          const parked = parseInt(m.subject.slice(names.forwardPrefix.length + 1), 36);
          moved[parked] = Number(m.string());
        }
      }
      if (n === 0) break;
    }
    const stuck = stored
      .filter((c) => c.subject === "parked" && !(c.seq in moved))
      .map((c) => c.seq);
    // The timer consumer of the namespace's shard.
    const shard = timerShard(names.namespaceKey);
    const scheduler = await consumerState(jsm, TIMER_STREAM, timerConsumer(shard));
    const timers = stuck.length > 0 ? await findTimers(jsm, names.stream, stuck) : {};
    const states: Record<string, GroupState | null> = {};
    for (const group of groups) {
      const consumer = groupNames(REGION, { namespace: namespace(), topic, group }).consumer;
      states[group] = await consumerState(jsm, names.stream, consumer);
    }
    return {
      stream: names.stream,
      leader: info.cluster?.leader ?? null,
      replicas: (info.cluster?.replicas ?? []).map((r) => ({
        name: r.name,
        current: r.current,
        lag: r.lag ?? 0,
      })),
      firstSeq: info.state.first_seq,
      lastSeq: info.state.last_seq,
      stored,
      moved,
      groups: states,
      timers,
      scheduler,
    };
  } finally {
    await nc.close();
  }
}

/**
 * What a group's consumer still has to deliver or see acknowledged (num_pending +
 * num_ack_pending), straight from JetStream; null when it cannot be read (no consumer yet).
 */
export async function groupOutstanding(
  urls: readonly string[],
  topic: string,
  group: string,
): Promise<number | null> {
  const nc = await connect({ servers: [...urls], timeout: 10_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    const names = topicNames(REGION, { namespace: namespace(), topic });
    const consumer = groupNames(REGION, { namespace: namespace(), topic, group }).consumer;
    const state = await consumerState(jsm, names.stream, consumer);
    return state && state.pending + state.ackPending;
  } finally {
    await nc.close();
  }
}

async function consumerState(
  jsm: JetStreamManager,
  stream: string,
  consumer: string,
): Promise<GroupState | null> {
  try {
    const c = await jsm.consumers.info(stream, consumer);
    return {
      ackFloor: c.ack_floor.stream_seq,
      delivered: c.delivered.stream_seq,
      pending: c.num_pending,
      ackPending: c.num_ack_pending,
      redelivered: c.num_redelivered,
    };
  } catch {
    return null;
  }
}

/**
 * The schedule stream's move timers for the given parked messages of `stream`. It is a work
 * queue (an acknowledged timer is deleted), so a timer found is one still pending; it allows no
 * ordered consumer, so it is read message by message.
 */
async function findTimers(
  jsm: JetStreamManager,
  stream: string,
  parked: readonly number[],
): Promise<Record<number, number[]>> {
  const wanted = new Set(parked);
  const out: Record<number, number[]> = {};
  for (const p of parked) out[p] = [];
  const info = await jsm.streams.info(TIMER_STREAM);
  let next = info.state.first_seq;
  const worker = async () => {
    while (next <= info.state.last_seq) {
      const seq = next++;
      const m = await jsm.streams.getMessage(TIMER_STREAM, { seq }).catch(() => null);
      if (!m) continue;
      const t = JSON.parse(m.string()) as { s?: string; q?: number; x?: number };
      if (t.s === stream && t.x === undefined && t.q !== undefined && wanted.has(t.q)) {
        out[t.q]!.push(seq);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return out;
}

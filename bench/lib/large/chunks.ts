// The large-body baseline: raw JetStream chunk publishes and chunk reads of the same bytes the
// gateway stores, with nothing of the gateway around them. A body is written as fixed-size chunks
// to one subject of a chunk stream, a bounded window of publishes in flight (each acknowledged by
// JetStream, as a claim-check store must), and read back in order by an ordered consumer that
// pulls at most `window` chunks' bytes ahead (back-pressure, as a streamed download needs).
import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { createHash } from "node:crypto";

export interface ChunkStream {
  readonly stream: string;
  /** Subjects are `<prefix>.<body id>`. */
  readonly prefix: string;
}

export interface ChunkOptions {
  readonly chunkBytes: number;
  /** Publishes in flight at once (upload), chunks' bytes pulled ahead (download). */
  readonly window: number;
  /** Bound on each publish and on the whole read, ms. */
  readonly timeoutMs: number;
}

/**
 * A chunk stream like `like` (the gateway's own body store's configuration, when it could be
 * found) under other names; else a plain one-replica file stream. Limits that would refuse the
 * benchmark's bodies (a message size or per-subject count) are lifted.
 */
export async function createChunkStream(
  jsm: JetStreamManager,
  name: string,
  like: Partial<StreamConfig> | null,
): Promise<ChunkStream> {
  const prefix = `bench.${name.toLowerCase()}`;
  const base: Partial<StreamConfig> = like ?? { storage: "file" };
  await jsm.streams.add({
    ...base,
    name,
    description: `vqs bench:large baseline ${name}`,
    subjects: [`${prefix}.>`],
    max_msg_size: -1,
    max_msgs_per_subject: -1,
    max_bytes: -1,
    max_msgs: -1,
  });
  return { stream: name, prefix };
}

/** Writes `body` as chunks to `<prefix>.<id>`; answers when JetStream acknowledged every chunk. */
export async function uploadChunks(
  js: JetStreamClient,
  s: ChunkStream,
  id: string,
  body: Uint8Array,
  o: ChunkOptions,
): Promise<void> {
  const subject = `${s.prefix}.${id}`;
  const inFlight = new Set<Promise<unknown>>();
  for (let off = 0; off < body.length; off += o.chunkBytes) {
    const p = js.publish(subject, body.subarray(off, off + o.chunkBytes), {
      expect: { streamName: s.stream },
      timeout: o.timeoutMs,
    });
    const tracked: Promise<unknown> = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= o.window) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

/** Reads body `id` back in order: its byte count and SHA-256 (hex). */
export async function downloadChunks(
  js: JetStreamClient,
  s: ChunkStream,
  id: string,
  length: number,
  o: ChunkOptions,
): Promise<{ bytes: number; sha256: string }> {
  const consumer = await js.consumers.get(s.stream, {
    filter_subjects: [`${s.prefix}.${id}`],
    deliver_policy: DeliverPolicy.All,
  });
  const hash = createHash("sha256");
  let bytes = 0;
  if (length === 0) return { bytes, sha256: hash.digest("hex") };
  const messages = await consumer.consume({ max_bytes: o.window * (o.chunkBytes + 1024) });
  const timer = setTimeout(() => void messages.close(), o.timeoutMs);
  try {
    for await (const m of messages) {
      hash.update(m.data);
      bytes += m.data.length;
      if (bytes >= length) break;
    }
  } finally {
    clearTimeout(timer);
    await messages.close();
  }
  if (bytes !== length) throw new Error(`chunk read of ${id}: ${bytes} of ${length} bytes`);
  return { bytes, sha256: hash.digest("hex") };
}

/** Removes a body's chunks (keeps the disk the run uses bounded). */
export async function removeChunks(
  jsm: JetStreamManager,
  s: ChunkStream,
  id: string,
): Promise<void> {
  await jsm.streams.purge(s.stream, { filter: `${s.prefix}.${id}` });
}

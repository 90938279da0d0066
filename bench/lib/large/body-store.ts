// Finds the gateway's large-body store in NATS without knowing its naming: after one large body
// went through the gateway, it is the stream holding the most bytes (a topic's stream holds only
// the message's pointer). Its configuration and chunk size are what the baseline copies.
import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";

export interface BodyStore {
  readonly stream: string;
  readonly config: Partial<StreamConfig>;
  /** The size of its first message's data: a full chunk of a body larger than one. */
  readonly chunkBytes: number;
}

/** The stream with the most bytes (at least `minBytes`), names starting BENCH_ excluded. */
export async function findBodyStore(
  jsm: JetStreamManager,
  minBytes = 2 * 1024 * 1024,
): Promise<BodyStore | null> {
  let best: { name: string; bytes: number; config: StreamConfig; first: number } | null = null;
  let seen = 0;
  for await (const info of jsm.streams.list()) {
    if (++seen > 100_000) break;
    if (info.config.name.startsWith("BENCH_")) continue;
    if (info.state.bytes >= minBytes && (!best || info.state.bytes > best.bytes)) {
      best = {
        name: info.config.name,
        bytes: info.state.bytes,
        config: info.config,
        first: info.state.first_seq,
      };
    }
  }
  if (!best) return null;
  const first = await jsm.streams.getMessage(best.name, { seq: best.first }).catch(() => null);
  // What makes a stream the gateway's (its name, subjects, sources) is not copied.
  const config: Partial<StreamConfig> = { ...best.config };
  for (const k of ["name", "subjects", "description", "sources", "mirror"] as const)
    delete config[k];
  return { stream: best.name, config, chunkBytes: first?.data.length ?? 1024 * 1024 };
}

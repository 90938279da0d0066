// Helpers of the large-body tests: a body sent as a chunked stream, and the body store's chunk
// count (all topics) read from the real nats-server.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { BODY_STREAM } from "../../src/nats/core/naming.js";

/** A body sent as a stream of `piece`-sized chunks, without Content-Length. */
export function chunked(body: Uint8Array, piece = 64 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= body.length) return controller.close();
      controller.enqueue(body.subarray(at, at + piece));
      at += piece;
    },
  });
}

/** Chunk messages stored in the body store (all topics). */
export async function storedChunks(nc: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(nc);
  try {
    return (await jsm.streams.info(BODY_STREAM)).state.messages;
  } catch {
    return 0;
  }
}

// Helpers of the large-body tests: a body sent as a chunked stream, the body store's chunk
// count (all topics) read from the real nats-server, a publish that must be stored, and the
// answer of a request sent piece by piece. Their gateway: useLargeBodyGateway (fixture.ts).
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ClientRequest } from "node:http";
import { expect } from "vitest";
import { BODY_STREAM } from "../../src/nats/core/naming.js";
import type { api } from "./http.js";

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

/** Publishes `body` to `topic`, which must answer 201, and returns the message's ID. */
export async function publishStored(
  q: ReturnType<typeof api>,
  topic: string,
  body: Buffer,
  h: Record<string, string> = {},
): Promise<string> {
  const res = await q.publish(topic, body, h);
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

/**
 * The answer to `req`, read whole: await it in the test, or leave it with the request (a
 * rejection nobody awaits is not reported).
 */
export function answerOf(req: ClientRequest): Promise<{ status: number; text: string }> {
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on("response", (res) => {
      const got: Buffer[] = [];
      res.on("data", (d: Buffer) => got.push(d));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(got).toString() }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
  });
  answer.catch(() => undefined);
  return answer;
}

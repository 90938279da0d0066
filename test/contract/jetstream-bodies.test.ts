// The large-body contract on JetStream: the gateway's body store (chunks in the VQS_BODIES stream)
// on a real nats-server. Main lane only: the store needs per-message TTL and batch Direct Get
// (nats-server 2.11+); on the older servers of the compatibility lanes it refuses large bodies,
// which test/integration/messages/api.test.ts covers.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { BODY_STREAM, bodyTopicPrefix } from "../../src/nats/core/naming.js";
import { useGateways } from "../helpers/fixture.js";
import { bodyStoreContract } from "./body-store-contract.js";

const fixture = useGateways(1);
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  nc = await connect({ servers: fixture.nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
});

const store = () => fixture.gateways[0]!.gateway.jetstream.bodies;

it("runs on a server with a large-body store", () => {
  expect(store().unsupportedReason).toBeNull();
});

bodyStoreContract("JetStream", {
  store,
  // The gateway's chunk size (256 KiB, under the server's max_payload).
  chunkBytes: 256 * 1024,
  storedChunks: async (topic) => {
    // The test gateway's region (test/helpers/gateway.ts).
    const filter = `${bodyTopicPrefix("iad1", topic)}.>`;
    // Every case writes first, so the stream exists: any error here is a failure.
    const info = await jsm.streams.info(BODY_STREAM, { subjects_filter: filter });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  },
});

// nats.js assembles a message that spans socket reads (Node reads 64 KiB at a time) in a buffer
// it grew by doubling: a 256 KiB chunk sat in ~440 KiB and left ~1 MiB of garbage, the larger
// part of a download's memory. patches/ (applied by patch-package on install, and copied into
// the image) allocates the message's own size, which the protocol line gives.
it("a 256 KiB chunk from NATS arrives in a buffer of its own size (nats.js patched)", async () => {
  const size = 256 * 1024;
  const subject = `vqs-test.assembly.${Date.now()}`;
  const sub = nc.subscribe(subject, { max: 1 });
  nc.publish(subject, new Uint8Array(size).fill(7));
  const seen: Uint8Array[] = [];
  for await (const m of sub) seen.push(m.data);
  expect(seen).toHaveLength(1);
  const data = seen[0]!;
  expect(data.length).toBe(size);
  expect(data.every((b) => b === 7)).toBe(true);
  expect(data.buffer.byteLength).toBeLessThan(size + 1024);
});

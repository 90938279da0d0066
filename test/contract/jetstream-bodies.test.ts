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

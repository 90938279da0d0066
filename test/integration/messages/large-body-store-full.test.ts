// A full large-body store (VQS_LARGE_BODY_STORE_BYTES reached, its namespace share at 100 %): a
// large publish answers 507 large_body_store_full with Retry-After: 60, keeps nothing of its body
// in the store, and small publishes go on; once space is freed, large ones are taken again.
// Real nats-server.
import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY_STREAM } from "../../../src/nats/core/naming.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { TEAM_A } from "../../helpers/issuer.js";

const MB = 1_000_000;

// A 3 MB store, all of it open to one namespace: one 2 MB body leaves no room for another.
const fx = useGateways(1, {
  config: { largeBodyStoreBytes: 3 * MB, largeBodyNamespacePercent: 100 },
});
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nc = await connect({ servers: fx.nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
});

/** A publish in the second namespace, with Content-Length or streamed without it (chunked). */
async function publishB(topic: string, body: Buffer, declared: boolean): Promise<Response> {
  const token = await fx.issuer.token({ ...TEAM_A, owner_id: "team_full_b" });
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < body.length; at += 256 * 1024)
        c.enqueue(body.subarray(at, at + 256 * 1024));
      c.close();
    },
  });
  return fetch(`${fx.gateways[0]!.url}/api/v3/topic/${topic}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: declared ? body : stream,
    duplex: "half",
  });
}

/** The body stream's totals. */
async function store() {
  const { state } = await jsm.streams.info(BODY_STREAM);
  return { messages: state.messages, bytes: state.bytes };
}

describe("a full large-body store", () => {
  it("answers 507 large_body_store_full with Retry-After: 60, keeps nothing of it; small ones go on", async () => {
    // Two namespaces, so the 507 comes from the store's byte limit, not from a namespace's share.
    const a = api(
      fx.gateways[0]!.url,
      await fx.issuer.token({ ...TEAM_A, owner_id: "team_full_a" }),
    );
    const b = api(
      fx.gateways[0]!.url,
      await fx.issuer.token({ ...TEAM_A, owner_id: "team_full_b" }),
    );
    const topic = uniqueName("store-full");
    expect((await a.publish(topic, randomBytes(2 * MB))).status).toBe(201);
    const before = await store();
    expect(before.bytes).toBeGreaterThan(2 * MB);

    // With Content-Length, and without (chunked): both are written until the store refuses.
    for (const declared of [true, false]) {
      const full = await publishB(topic, randomBytes(2 * MB), declared);
      expect(full.status).toBe(507);
      expect(full.headers.get("retry-after")).toBe("60");
      expect(await errorCode(full)).toBe("large_body_store_full");
      // Nothing of the refused body stays behind (its written chunks are purged).
      await expect.poll(store, { timeout: 10_000 }).toEqual(before);
    }
    const { usage } = await fx.gateways[0]!.gateway.jetstream.bodies.sweep();
    expect(usage.get("team_full_b/prj_1/production")).toBeUndefined();
    expect((await b.receive(topic, "g")).status).toBe(204);

    // Small publishes are not stored there and go on, in both namespaces.
    expect((await b.publish(topic, "small")).status).toBe(201);
    expect((await a.publish(topic, "small")).status).toBe(201);

    // Space freed (the first namespace's topic deleted): the large publish is taken again.
    await a.call("DELETE", topic);
    const again = uniqueName("store-freed");
    const body = randomBytes(2 * MB);
    expect((await b.publish(again, body)).status).toBe(201);
    const got = await b.receive(again, "g");
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).includes(body)).toBe(true);
    await b.call("DELETE", topic);
    await b.call("DELETE", again);
  });
});

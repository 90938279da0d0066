// Per-message TTL on a current nats-server (2.11+): storage is freed when a message expires, not
// at the stream's 7-day max age. Runs against the current server fetched by
// scripts/ensure-current-nats.mjs (the rest of the suite runs on the distribution's 2.9.10,
// where the feature does not exist and streams keep messages for max_age).
import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { TIMER_STREAM, topicNames } from "../../../src/nats/core/naming.js";
import { encodeHeaders, keyToken } from "../../../src/nats/messages/message-codec.js";
import { supportsMessageTtl } from "../../../src/nats/core/server-features.js";
import { newNonce } from "../../../src/queue/identity/message-id.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useConnectedGateway } from "../../helpers/fixture.js";
import { startGateway } from "../../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../../helpers/http.js";
import { currentNatsServerBinary } from "../../helpers/processes/nats.js";
import { eventually } from "../../helpers/wait.js";

const f = useConnectedGateway({}, { bin: currentNatsServerBinary() });

const namespace = makeNamespace("team_a", "prj_1", "production", null);
const names = (topic: string) => topicNames("iad1", { namespace, topic });

/** Stores a message with a TTL shorter than the API allows (60 s), to see storage freed soon. */
function publishShort(
  topic: string,
  body: string,
  retentionSeconds: number,
  delaySeconds = 0,
  idempotencyKey: string | null = null,
) {
  return f.gw.gateway.jetstream.broker.publish(
    { namespace, topic },
    {
      payload: new TextEncoder().encode(body),
      contentType: null,
      retentionSeconds,
      delaySeconds,
      idempotencyKey,
      trace: null,
      headers: {},
      nonce: newNonce(),
    },
  );
}

async function storedOnSubject(topic: string, suffix: "m" | "d" | "f.>" | "k.>"): Promise<number> {
  const n = names(topic);
  const info = await f.jsm.streams.info(n.stream, {
    subjects_filter: n.ready.replace(/\.m$/, `.${suffix}`),
  });
  return Object.values(info.state.subjects ?? {}).reduce((s, c) => s + c, 0);
}

describe("per-message TTL (nats-server 2.11+)", () => {
  it("runs on a server that has it", () => {
    expect(supportsMessageTtl(f.nc.info?.version)).toBe(true);
    expect(supportsMessageTtl("2.9.10")).toBe(false);
    expect(supportsMessageTtl("2.10.27")).toBe(false);
    expect(supportsMessageTtl("2.11.0")).toBe(true);
  });

  it("stamps each message with its retention and frees its storage when it expires", async () => {
    const topic = uniqueName("ttl");
    const q = api(f.gw.url, await f.issuer.token());
    const res = await q.publish(topic, "kept", { "vqs-retention-seconds": "120" });
    const { messageId } = (await res.json()) as { messageId: string };
    const seq = parseInt(messageId.slice(1, messageId.indexOf("_")), 36);
    const stored = await f.jsm.direct.getMessage(names(topic).stream, { seq });
    expect(stored?.header.get("Nats-TTL")).toBe("120");
    expect((await f.jsm.streams.info(names(topic).stream)).config.allow_msg_ttl).toBe(true);

    await publishShort(topic, "short", 2);
    expect(await storedOnSubject(topic, "m")).toBe(2);
    await expect.poll(() => storedOnSubject(topic, "m"), { timeout: 8000, interval: 250 }).toBe(1);
    const got = await parts(await q.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString())).toEqual(["kept"]);
  });

  it("gives an idempotency key's record its message's time left and a second, with no timer, so it goes with the key", async () => {
    const topic = uniqueName("ttl-key");
    const q = api(f.gw.url, await f.issuer.token());
    const timers = async () => (await f.jsm.streams.info(TIMER_STREAM)).state.messages;
    const before = await timers();
    const res = await q.publish(topic, "keyed", {
      "vqs-idempotency-key": "k-60",
      "vqs-retention-seconds": "60",
    });
    expect(res.status).toBe(201);
    const n = names(topic);
    const record = await f.jsm.streams.getMessage(n.stream, {
      last_by_subj: `${n.keyPrefix}.${keyToken("k-60")}`,
    });
    expect(record?.header?.get("Nats-TTL")).toBe("61s");
    expect(await timers()).toBe(before);

    // A key whose message lives 2 s: its record (3 s) is gone soon after, and the key is free.
    const first = await publishShort(topic, "short", 2, 0, "k-2");
    expect(first.kind).toBe("stored");
    expect(await storedOnSubject(topic, "k.>")).toBe(2);
    await expect
      .poll(() => storedOnSubject(topic, "k.>"), { timeout: 10_000, interval: 250 })
      .toBe(1);
    const again = await publishShort(topic, "short again", 60, 0, "k-2");
    expect(again.kind).toBe("stored");
  });

  it("counts a key record's TTL from its message's store answer, so a slow store cannot outlive it", async () => {
    const topic = uniqueName("ttl-slow-key");
    await publishShort(topic, "warm-up", 60); // the stream exists
    const n = names(topic);
    const js = jetstream(f.nc);
    // The message is stored at once and its answer comes 2.5 s later: its expiry runs from
    // the store, so a record TTL counted from the publish's start would end before it.
    const slowAnswer = async (msgID: string) => {
      const ack = await js.publish(n.ready, "slow", {
        msgID,
        headers: encodeHeaders({
          payload: new Uint8Array(),
          contentType: null,
          retentionSeconds: 60,
          delaySeconds: 0,
          idempotencyKey: "slow-store",
          trace: null,
          headers: {},
          nonce: newNonce(),
        }),
      });
      await sleep(2500);
      return ack;
    };
    const done = await f.gw.gateway.jetstream.keys.publish(
      n,
      keyToken("slow-store"),
      60_000,
      slowAnswer,
      () => Promise.resolve(),
    );
    expect(done.kind).toBe("stored");
    const record = await f.jsm.streams.getMessage(n.stream, {
      last_by_subj: `${n.keyPrefix}.${keyToken("slow-store")}`,
    });
    expect(record?.header?.get("Nats-TTL")).toBe("61s");
  });

  it("gives a delayed message's visible copy and its pointer the time left, so all of it goes", async () => {
    const topic = uniqueName("ttl-delay");
    const q = api(f.gw.url, await f.issuer.token());
    await publishShort(topic, "soon", 4, 1);
    let got: Awaited<ReturnType<typeof parts>> = [];
    const due = async () => {
      const res = await q.receive(topic, "g");
      got = res.status === 200 ? await parts(res) : [];
      return got.length > 0;
    };
    expect(await eventually(due, 10_000, 100)).toBe(true);
    expect(got.map((p) => p.body.toString())).toEqual(["soon"]);
    expect(await storedOnSubject(topic, "f.>")).toBe(1);
    await expect
      .poll(
        async () =>
          (await storedOnSubject(topic, "m")) +
          (await storedOnSubject(topic, "d")) +
          (await storedOnSubject(topic, "f.>")),
        { timeout: 10_000, interval: 250 },
      )
      .toBe(0);
  });

  it("turns it on for a topic stream made without it", async () => {
    const topic = uniqueName("ttl-old");
    const old = await startGateway(f.nats.url, f.issuer, { config: { messageTtl: "off" } });
    try {
      const token = await f.issuer.token();
      expect((await api(old.url, token).publish(topic, "before")).status).toBe(201);
      expect((await f.jsm.streams.info(names(topic).stream)).config.allow_msg_ttl).toBeFalsy();
      const fresh = await startGateway(f.nats.url, f.issuer);
      try {
        expect((await api(fresh.url, token).publish(topic, "after")).status).toBe(201);
        expect((await f.jsm.streams.info(names(topic).stream)).config.allow_msg_ttl).toBe(true);
      } finally {
        await fresh.close();
      }
      // A gateway with it off sends no Nats-TTL, which a stream that allows it accepts.
      expect((await api(old.url, token).publish(topic, "again")).status).toBe(201);
    } finally {
      await old.close();
    }
  });
});

// One contract for the failover port Deferrer (src/queue/broker.ts), run against MemoryDeferrer
// (memory.test.ts, in the quick lane) and the gateway's JetStream failover to a neighbour
// nats-server (jetstream-deferrer.test.ts): a deferred message reaches its home topic once, an
// idempotency key keeps one copy across deferrals and against a message already home, and with
// no neighbour reachable the publish fails as storage_unavailable (the client retries).
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/errors.js";
import type { Broker, Delivery, Deferrer, NewMessage } from "../../src/queue/broker.js";
import { makeNamespace, type GroupAddress, type TopicAddress } from "../../src/queue/namespace.js";

export interface DeferrerUnderTest {
  readonly deferrer: () => Deferrer;
  /** The home region's store, where deferred messages end up. */
  readonly broker: () => Broker;
  /** Lets relocation run (the memory twin's pass; time passing on JetStream). */
  relocate(): Promise<void>;
  /** How many relocation turns to wait at most. */
  readonly patience: number;
  /** Makes every neighbour unreachable (for good: the suite's last case). */
  cutNeighbours(): Promise<void>;
}

function message(text: string, idempotencyKey: string | null = null): NewMessage {
  return {
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds: 3600,
    delaySeconds: 0,
    idempotencyKey,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
    headers: {},
  };
}

const text = (d: Delivery) => new TextDecoder().decode(d.message.payload);

export function deferrerContract(name: string, under: DeferrerUnderTest): void {
  const topic = (): TopicAddress => ({
    namespace: makeNamespace("defer-team", randomBytes(4).toString("hex"), "production", null),
    topic: "orders",
  });
  const group = (t: TopicAddress): GroupAddress => ({ ...t, group: "g" });

  /** Pulls until `want` deliveries came, then once more after another turn (nothing more). */
  async function pullAll(g: GroupAddress, want: number): Promise<string[]> {
    const got: Delivery[] = [];
    for (let i = 0; i < under.patience && got.length < want; i++) {
      await under.relocate();
      got.push(...((await under.broker().pull(g, 10)) ?? []));
    }
    await under.relocate();
    got.push(...((await under.broker().pull(g, 10)) ?? []));
    return got.map(text).sort();
  }

  describe(`deferrer contract: ${name}`, () => {
    it("brings deferred messages to their home topic, each once", async () => {
      const t = topic();
      await under.deferrer().defer(t, message("a"));
      await under.deferrer().defer(t, message("b"));
      expect(await pullAll(group(t), 2)).toEqual(["a", "b"]);
    });

    it("brings a deferred message home with its own headers", async () => {
      const t = topic();
      await under.deferrer().defer(t, { ...message("h"), headers: { "x-order": "42" } });
      const got: Delivery[] = [];
      for (let i = 0; i < under.patience && got.length === 0; i++) {
        await under.relocate();
        got.push(...((await under.broker().pull(group(t), 10)) ?? []));
      }
      expect(got.map((d) => d.message.headers)).toEqual([{ "x-order": "42" }]);
    });

    it("keeps one copy per idempotency key, deferred twice or already home", async () => {
      const t = topic();
      await under.deferrer().defer(t, message("first", "k1"));
      await under.deferrer().defer(t, message("again", "k1"));
      expect((await under.broker().publish(t, message("home", "k2"))).kind).toBe("stored");
      await under.deferrer().defer(t, message("deferred", "k2"));
      await under.deferrer().defer(t, message("other", "k3"));
      expect(await pullAll(group(t), 3)).toEqual(["first", "home", "other"]);
    });

    it("fails with storage_unavailable when no neighbour can take the message", async () => {
      await under.cutNeighbours();
      const err = await under
        .deferrer()
        .defer(topic(), message("lost"))
        .catch((e: unknown) => e);
      expect(isAppError(err) && err.code).toBe("storage_unavailable");
    });
  });
}

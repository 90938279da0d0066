// A pushed group's consumer is made with the push lease as ack_wait and maxConcurrency as
// max_ack_pending, so gateways making it at once leave it so: on nats-server 2.9 a create of a
// consumer that already exists is an update, and a default config sent by the last of them would
// revert the lease and cap another gateway had set (a timed-out push then came back after the
// default 60 s instead of its lease, and the cap was lifted). And a push feed is not told "no
// such topic" by the cache kept for receives: a topic another gateway created a moment after the
// feed found it missing is fed at once (it waited for the next look, 10 s, before). A receive
// that makes the consumer of a group its gateway pushes makes it with the push config too.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { groupNames, topicNames } from "../../../src/nats/core/naming.js";
import { Topology } from "../../../src/nats/queue-state/topics/topology.js";
import { makeNamespace, type TopicAddress } from "../../../src/queue/namespace.js";
import { useGateways } from "../../helpers/fixture.js";
import { uniqueName } from "../../helpers/http.js";

const fx = useGateways(0);

/** One gateway's view of the region's topics and groups. */
const gateway = (jsm: JetStreamManager) =>
  new Topology(jsm, {
    replicas: 1,
    maxAgeMs: 3_600_000,
    allowMsgTtl: false,
    dedupWindowMs: 60_000,
    maxMsgBytes: 1024 * 1024,
    ackWaitMs: 60_000,
    inactiveThresholdMs: 3_600_000,
    topicHardMaxBytes: 0,
  });

/** A JetStream manager on the fixture's server and a new topic's address, for one test. */
async function withTopic(
  prefix: string,
  test: (jsm: JetStreamManager, topic: TopicAddress) => Promise<void>,
): Promise<void> {
  const nc = await connect({ servers: fx.nats.url });
  try {
    const namespace = makeNamespace("team_a", "prj_1", "production", null);
    await test(await jetstreamManager(nc), { namespace, topic: uniqueName(prefix) });
  } finally {
    await nc.close();
  }
}

describe("a pushed group's consumer, made by several gateways at once", () => {
  it("has the push lease and cap from its creation, whichever create lands last", () =>
    withTopic("made-at-once", async (jsm, topic) => {
      await gateway(jsm).ensureStream(topicNames("iad1", topic));
      const names = groupNames("iad1", { ...topic, group: "workers" });
      const pushed = { ackWaitMs: 3000, maxAckPending: 3 };
      // Each finds no consumer and makes one; each create carries the same push config.
      const made = await Promise.all(
        [1, 2, 3].map(() => gateway(jsm).ensureConsumer(names, pushed)),
      );
      expect(made).toEqual([true, true, true]);
      const { config } = await jsm.consumers.info(names.stream, names.consumer);
      expect(config.ack_wait).toBe(3000 * 1e6);
      expect(config.max_ack_pending).toBe(3);
    }));

  it("is made with the feed's lease and cap by a receive on a gateway that pushes the group", () =>
    withTopic("made-by-receive", async (jsm, topic) => {
      const here = gateway(jsm);
      await here.ensureStream(topicNames("iad1", topic));
      const names = groupNames("iad1", { ...topic, group: "workers" });
      const pushed = { ackWaitMs: 4000, maxAckPending: 5 };
      here.notePushed(names, pushed); // this gateway's feed follows the group's push settings
      expect(await here.ensureConsumer(names)).toBe(true); // a receive (by ID) gets there first
      const { config } = await jsm.consumers.info(names.stream, names.consumer);
      expect(config.ack_wait).toBe(4000 * 1e6);
      expect(config.max_ack_pending).toBe(5);
      // Once the feed stops, a receive makes an unpushed group's consumer with the defaults.
      here.forgetPushed(names, pushed);
      const other = groupNames("iad1", { ...topic, group: "pollers" });
      here.notePushed(other, { ackWaitMs: 4000, maxAckPending: 5 });
      here.forgetPushed(other, { ackWaitMs: 4000, maxAckPending: 5 }); // not the noted one: kept
      await jsm.consumers.delete(names.stream, names.consumer);
      here.forgetConsumer(names);
      expect(await here.ensureConsumer(names)).toBe(true);
      expect((await jsm.consumers.info(names.stream, names.consumer)).config.ack_wait).toBe(
        60_000 * 1e6,
      );
      expect(await here.ensureConsumer(other)).toBe(true);
      expect((await jsm.consumers.info(other.stream, other.consumer)).config.ack_wait).toBe(
        4000 * 1e6,
      );
    }));

  it("is made for a feed at once when another gateway created the topic just after it was missing", () =>
    withTopic("created-elsewhere", async (jsm, topic) => {
      const names = groupNames("iad1", { ...topic, group: "workers" });
      const here = gateway(jsm);
      expect(await here.ensureConsumer(names)).toBe(false); // missing, and remembered a moment
      await gateway(jsm).ensureStream(topicNames("iad1", topic)); // another gateway's publish
      expect(await here.ensureConsumer(names, { ackWaitMs: 3000, maxAckPending: 3 })).toBe(true);
    }));
});

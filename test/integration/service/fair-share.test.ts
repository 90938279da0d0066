// Fair share of the store among tenants (src/queue/admission/in-flight/fair-share.ts): a tenant flooding a
// gateway with publishes on many connections holds only its share of the operations toward NATS,
// so another tenant's publish goes beside a few of the flood's, not behind all of them. Decided by
// the order in which the server stored the messages (its timestamps), not by durations.
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { topicNames } from "../../../src/nats/core/naming.js";
import { PER_TENANT } from "../../../src/queue/admission/in-flight/fair-share.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { useConnectedGateway } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { eventually } from "../../helpers/settings.js";

const fx = useConnectedGateway();

/** A's connections, each publishing again as soon as it is answered. */
const CONNECTIONS = 64;
/** B's publishes, one at a time, each right after a marker stored by the test itself. */
const PROBES = 15;
const MARKERS = "FAIR_SHARE_MARKERS";

/** The server's store timestamps (ns) of a stream's messages on `subject`, in stored order. */
async function storedAt(js: JetStreamClient, stream: string, subject: string): Promise<bigint[]> {
  const info = await fx.jsm.streams.info(stream);
  const consumer = await js.consumers.get(stream, { filter_subjects: [subject] });
  const times: bigint[] = [];
  for await (const m of await consumer.fetch({ max_messages: info.state.messages })) {
    times.push(m.timestampNanos);
    if (m.info.pending === 0) break;
  }
  return times;
}

const namesOf = (project: string, topic: string) =>
  topicNames("iad1", { namespace: makeNamespace("team_a", project, "production", null), topic });

describe("fair share of the store among tenants", () => {
  it("stores a quiet tenant's publish beside a few of a flooding tenant's, not behind them all", async () => {
    const js = jetstream(fx.nc);
    await fx.jsm.streams.add({ name: MARKERS, subjects: [`${MARKERS}.>`] });
    const a = api(fx.gw.url, await fx.issuer.token({ project_id: "prj_fair_flood" }));
    const b = api(fx.gw.url, await fx.issuer.token({ project_id: "prj_fair_quiet" }));
    const [topicA, topicB] = [uniqueName("flood"), uniqueName("quiet")];
    const [namesA, namesB] = [namesOf("prj_fair_flood", topicA), namesOf("prj_fair_quiet", topicB)];
    // Both topics exist first: neither publish below pays for making its stream.
    expect((await a.publish(topicA, "first")).status).toBe(201);
    expect((await b.publish(topicB, "first")).status).toBe(201);
    let flooding = true;
    let stored = 0;
    const flood = Array.from({ length: CONNECTIONS }, async () => {
      while (flooding) {
        const res = await a.publish(topicA, "a");
        expect(res.status).toBe(201);
        await res.arrayBuffer();
        stored++;
      }
    });
    try {
      expect(await eventually(() => stored > 4 * CONNECTIONS, 60_000)).toBe(true);
      for (let i = 0; i < PROBES; i++) {
        await js.publish(`${MARKERS}.b`, String(i));
        expect((await b.publish(topicB, `b${i}`)).status).toBe(201);
      }
    } finally {
      flooding = false;
      await Promise.all(flood);
    }
    const [timesA, timesB, marks] = await Promise.all([
      storedAt(js, namesA.stream, namesA.ready),
      storedAt(js, namesB.stream, namesB.ready),
      storedAt(js, MARKERS, `${MARKERS}.b`),
    ]);
    // Of A's messages, those stored after a probe's marker and before its publish: the flood's
    // operations that B's publish waited behind.
    const behind = marks.map((m, i) => timesA.filter((t) => t > m && t < timesB[i + 1]!).length);
    const median = behind.sort((x, y) => x - y)[Math.floor(PROBES / 2)]!;
    // Without the fair share B's publish waited behind most of A's 64 (one per connection);
    // with it behind A's PER_TENANT in flight, and those A is given in turn meanwhile.
    expect(median).toBeLessThan(3 * PER_TENANT);
  }, 120_000);
});

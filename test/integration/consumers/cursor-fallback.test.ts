// `cursorFallback: "latest"` of @vercel/queue 0.6.0's receive (the `Vqs-Cursor-Fallback` header)
// on a real nats-server: a group the receive makes starts after the topic's last message (its
// consumer delivers new), an existing group is never moved, and any other value is a 400 that
// makes no group. On every server lane: the consumer's creation is what differs between them
// (nats-server 2.9 takes a create of an existing consumer as an update). The rules in
// milliseconds: test/unit/queue/cursor-fallback-rules.test.ts.
import { PollingQueueClient } from "@vercel/queue";
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";

const f = useGateways(1);

async function client(): Promise<PollingQueueClient> {
  return new PollingQueueClient({
    region: "iad1",
    token: await f.issuer.token(),
    deploymentId: null,
    resolveBaseUrl: () => new URL(f.gateways[0]!.url),
  });
}

/** What one receive of up to 10 hands the handler (each acknowledged by the client). */
async function receive(
  q: PollingQueueClient,
  topic: string,
  group: string,
  cursorFallback?: "earliest" | "latest",
): Promise<unknown[]> {
  const seen: unknown[] = [];
  const r = await q.receive(topic, group, (payload) => void seen.push(payload), {
    limit: 10,
    ...(cursorFallback ? { cursorFallback } : {}),
  });
  expect(r.ok || seen.length === 0).toBe(true);
  return seen;
}

describe("cursorFallback with @vercel/queue", () => {
  it("latest starts a new group after the last message; an existing group is never moved", async () => {
    const q = await client();
    const topic = uniqueName("cursor");
    for (const n of [1, 2, 3]) await q.send(topic, { n });
    expect(await receive(q, topic, "old", "earliest")).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);

    // The check: a new group with latest does not get the 3 published before it.
    expect(await receive(q, topic, "new", "latest")).toEqual([]);
    await q.send(topic, { n: 4 });
    expect(await receive(q, topic, "new", "latest")).toEqual([{ n: 4 }]);
    // Existing groups are not reset by latest.
    expect(await receive(q, topic, "old", "latest")).toEqual([{ n: 4 }]);
    // Without the option (earliest, the default) a new group replays the topic.
    expect(await receive(q, topic, "replay")).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  it("refuses any other value with 400 invalid_cursor_fallback, making no group", async () => {
    const q = await client();
    const topic = uniqueName("cursor-bad");
    await q.send(topic, { n: 1 });
    const http = api(f.gateways[0]!.url, await f.issuer.token());
    for (const value of ["Latest", "newest", "", "latest, earliest"]) {
      const res = await http.receive(topic, "g", { "vqs-cursor-fallback": value });
      expect([res.status, await errorCode(res)], JSON.stringify(value)).toEqual([
        400,
        "invalid_cursor_fallback",
      ]);
    }
    // The refused receives made nothing: the group, made now at latest, starts after n: 1.
    expect(await receive(q, topic, "g", "latest")).toEqual([]);
    const groups = await http.call("GET", `${topic}/consumers`);
    expect(groups.status).toBe(200);
    const names = ((await groups.json()) as { consumerGroups: { name: string }[] }).consumerGroups;
    expect(names.map((g) => g.name)).toEqual(["g"]);
  });
});

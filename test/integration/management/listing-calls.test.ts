// Listings bound their JetStream API calls per request: a topic listing asking for 1,000 topics,
// and a group listing of a topic with 250 groups, each make at most LISTING_CALLS calls (counted
// on the real nats-server: every request the gateway sends under $JS.API), their pages cut there
// with a cursor, and paging on lists every topic and group once.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LISTING_CALLS } from "../../../src/queue/management/management-service.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";
import { memoryTmpDir } from "../../helpers/processes/nats.js";

const fx = useGateways(
  1,
  { env: { VQS_MAX_TOPICS_PER_NAMESPACE: "3000" } },
  { tmpDir: memoryTmpDir() },
);

let nc: NatsConnection;
let calls = 0;

beforeAll(async () => {
  nc = await connect({ servers: fx.nats.url });
  // Every JetStream API request of the account (the gateway's included), as the server gets it.
  const sub = nc.subscribe("$JS.API.>", { callback: () => void calls++ });
  void sub;
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
});

/** The JetStream API calls `run` made (the test's own subscription sees them all). */
async function counted<T>(run: () => Promise<T>): Promise<{ value: T; calls: number }> {
  await nc.flush();
  const before = calls;
  const value = await run();
  await nc.flush();
  return { value, calls: calls - before };
}

async function get<T>(token: string, path: string): Promise<T> {
  const res = await fetch(`${fx.gateways[0]!.url}/api/v3/${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

describe("listings bound their JetStream calls", () => {
  it("cuts a topic page asking for 1,000 at its call budget; paging lists every topic once", async () => {
    const token = await fx.issuer.token({ owner_id: uniqueName("team") });
    const client = api(fx.gateways[0]!.url, token);
    const names = Array.from({ length: 160 }, (_, i) => `t-${String(i).padStart(3, "0")}`);
    // Each publish makes a stream; on a busy machine one may time out (503) and is retried, with
    // a key so that a retry never stores a second message.
    const publishOnce = async (n: string) => {
      let status = 0;
      for (let attempt = 0; attempt < 4 && status !== 201; attempt++) {
        status = (await client.publish(n, "x", { "vqs-idempotency-key": n })).status;
      }
      return status;
    };
    for (let i = 0; i < names.length; i += 16) {
      const statuses = await Promise.all(names.slice(i, i + 16).map(publishOnce));
      expect(statuses).toEqual(statuses.map(() => 201));
    }
    type Page = { topics: { name: string }[]; nextCursor: string | null };
    const first = await counted(() => get<Page>(token, "topics?limit=1000"));
    expect(first.calls).toBeGreaterThan(0);
    expect(first.calls).toBeLessThanOrEqual(LISTING_CALLS + 10);
    expect(first.value.topics.length).toBeLessThan(names.length);
    expect(first.value.nextCursor).toBe(first.value.topics.at(-1)!.name);
    const seen = first.value.topics.map((t) => t.name);
    for (let cursor = first.value.nextCursor; cursor !== null;) {
      const page = await counted(() => get<Page>(token, `topics?limit=1000&cursor=${cursor}`));
      expect(page.calls).toBeLessThanOrEqual(LISTING_CALLS + 10);
      seen.push(...page.value.topics.map((t) => t.name));
      cursor = page.value.nextCursor;
    }
    expect(seen).toEqual(names);
  }, 120_000);

  it("pages a topic's groups at its call budget; paging lists every group once", async () => {
    const token = await fx.issuer.token({ owner_id: uniqueName("team") });
    const client = api(fx.gateways[0]!.url, token);
    const topic = uniqueName("many-groups");
    expect((await client.publish(topic, "x")).status).toBe(201);
    const groups = Array.from({ length: 250 }, (_, i) => `g-${String(i).padStart(3, "0")}`);
    for (let i = 0; i < groups.length; i += 25) {
      // A receive makes the group (and leases the message, so each group has one in flight).
      // (A 503 on a busy machine is retried: a second receive of the group answers 204.)
      const receiveOnce = async (g: string) => {
        let status = 0;
        for (let attempt = 0; attempt < 4 && status !== 200 && status !== 204; attempt++) {
          status = (await client.receive(topic, g)).status;
        }
        return status === 204 ? 200 : status;
      };
      const statuses = await Promise.all(groups.slice(i, i + 25).map(receiveOnce));
      expect(statuses).toEqual(statuses.map(() => 200));
    }
    type Page = { consumerGroups: { name: string }[]; nextCursor: string | null };
    const first = await counted(() => get<Page>(token, `topic/${topic}/consumers?limit=1000`));
    expect(first.calls).toBeGreaterThan(0);
    expect(first.calls).toBeLessThanOrEqual(LISTING_CALLS + 10);
    expect(first.value.consumerGroups.length).toBeLessThan(groups.length);
    expect(first.value.nextCursor).toBe(first.value.consumerGroups.at(-1)!.name);
    const seen = first.value.consumerGroups.map((g) => g.name);
    for (let cursor = first.value.nextCursor; cursor !== null;) {
      const page = await counted(() =>
        get<Page>(token, `topic/${topic}/consumers?limit=1000&cursor=${cursor}`),
      );
      expect(page.calls).toBeLessThanOrEqual(LISTING_CALLS + 10);
      seen.push(...page.value.consumerGroups.map((g) => g.name));
      cursor = page.value.nextCursor;
    }
    expect(seen).toEqual(groups);
  }, 120_000);
});

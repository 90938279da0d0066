// GET /api/v3/topics a page at a time over 2,500 topics of one namespace (as issue #13 asks),
// against a real nats-server: each topic once, by name, 100 a page whatever `limit` asks, the
// last page without a cursor. Main lane only: the listing past JetStream's own pages of 256 is
// held on every server lane by the management contract (test/contract/queue-admin-contract.ts),
// and the page rules on the twins (test/unit/queue/management-rules.test.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, uniqueName } from "../../helpers/http.js";

const fx = useGateways(1, { env: { VQS_MAX_TOPICS_PER_NAMESPACE: "3000" } });

let token: string;
beforeAll(async () => {
  token = await fx.issuer.token({ sub: "alice" });
});

interface TopicPage {
  topics: { name: string; messages: number }[];
  nextCursor: string | null;
}

async function page(query: string, headers: Record<string, string>): Promise<TopicPage> {
  const res = await fetch(`${fx.gateways[0]!.url}/api/v3/topics${query}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as TopicPage;
}

describe("topic pages", () => {
  it("lists topics a page at a time, by name, each once", async () => {
    // A namespace of its own (a deployment), so the count is exact.
    const deployment = uniqueName("dpl");
    const headers = { "vqs-deployment-id": deployment };
    const names = Array.from({ length: 2500 }, (_, i) => `p-${String(i).padStart(4, "0")}`);
    const scoped = api(fx.gateways[0]!.url, token, headers);
    // Each publish makes a stream; on a busy machine one may time out (503) and is retried, with
    // a key so that a retry never stores a second message.
    const publishOnce = async (n: string) => {
      let status = 0;
      for (let attempt = 0; attempt < 4 && status !== 201; attempt++) {
        const res = await scoped.publish(n, "x", { "vqs-idempotency-key": n });
        status = res.status;
        if (status !== 201) console.warn(`publish ${n}: ${status} ${await res.text()}`);
      }
      expect(status).toBe(201);
    };
    for (let i = 0; i < names.length; i += 25) {
      await Promise.all(names.slice(i, i + 25).map(publishOnce));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: TopicPage = await page(`?limit=400${cursor ? `&cursor=${cursor}` : ""}`, headers);
      for (const t of r.topics) expect(t.messages).toBe(1);
      seen.push(...r.topics.map((t) => t.name));
      cursor = r.nextCursor;
      pages++;
    } while (cursor !== null);
    // A page holds at most 100 topics whatever `limit` asks (its JetStream calls are bounded).
    expect(pages).toBe(25);
    expect(seen).toEqual(names);
    const all = await page("?limit=1000", headers);
    expect(all.topics).toHaveLength(100);
    expect(all.nextCursor).toBe(names[99]);
    // Without a limit, 100 a page; the last page has no cursor.
    const next = await page(`?cursor=${names[999]}`, headers);
    expect(next.topics.map((t) => t.name)).toEqual(names.slice(1000, 1100));
    expect(next.nextCursor).toBe(names[1099]);
    const last = await page(`?cursor=${names[2449]}`, headers);
    expect(last.topics.map((t) => t.name)).toEqual(names.slice(2450));
    expect(last.nextCursor).toBeNull();
  }, 240_000);
});

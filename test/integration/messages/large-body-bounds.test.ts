// The bounds on large bodies, each with its setting: a cap on concurrent uploads (503 with
// Retry-After), a namespace's share of the body store (403 for it, others go on), the minimum
// upload rate (408 instead of a fixed timeout; a slow upload above it is kept, however long),
// the ingest byte-rate budget. Real nats-server.
import { randomBytes } from "node:crypto";
import { request, type ClientRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../../src/config.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startIssuer, TEAM_A, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { scrape } from "../../helpers/metrics.js";

const MB = 1_000_000;

let nats: TestNats;
let issuer: TestIssuer;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
});

afterAll(async () => {
  for (const g of gateways) await g.close();
  await issuer?.close();
  await nats?.dispose();
});

async function gateway(config: Partial<Config>): Promise<TestGateway> {
  const g = await startGateway(nats.url, issuer, { config });
  gateways.push(g);
  return g;
}

/** A publish whose body the test writes itself (and may leave unfinished). */
async function upload(url: string, topic: string, length: number, token?: string) {
  let answer: (r: { status: number; body: string }) => void = () => undefined;
  const done = new Promise<{ status: number; body: string }>((r) => (answer = r));
  const req: ClientRequest = request(new URL(`${url}/api/v3/topic/${topic}`), {
    method: "POST",
    headers: {
      authorization: `Bearer ${token ?? (await issuer.token())}`,
      "content-length": String(length),
    },
  });
  req.on("response", (res) => {
    let body = "";
    res.on("data", (c: Buffer) => (body += c.toString()));
    res.on("end", () => answer({ status: res.statusCode ?? 0, body }));
  });
  req.on("error", () => answer({ status: 0, body: "" }));
  return { req, done };
}

describe("large-body bounds", () => {
  it("answers 503 large_body_busy with Retry-After past VQS_MAX_LARGE_UPLOADS; small ones go on", async () => {
    const gw = await gateway({ maxLargeStreams: 1 });
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    const first = await upload(gw.url, topic, 4 * MB);
    first.req.write(randomBytes(2 * MB));
    await expect
      .poll(
        async () => {
          const text = await scrape(gw.metricsUrl);
          return /^vqs_large_body_streams 1$/m.test(text);
        },
        { timeout: 15_000 },
      )
      .toBe(true);
    const busy = await q.publish(topic, randomBytes(2 * MB));
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(await errorCode(busy)).toBe("large_body_busy");
    expect((await q.publish(topic, "small")).status).toBe(201);
    first.req.end(randomBytes(2 * MB));
    expect((await first.done).status).toBe(201);
    expect((await q.publish(topic, randomBytes(2 * MB))).status).toBe(201);
    await q.call("DELETE", topic); // the body store is the region's: leave it empty
  });

  it("keeps a namespace within its share of the store (403), while another namespace publishes", async () => {
    // An 8 MB store, 50% each: 4 MB per namespace.
    const gw = await gateway({ largeBodyStoreBytes: 8 * MB, largeBodyNamespacePercent: 50 });
    const a = api(gw.url, await issuer.token({ ...TEAM_A, owner_id: "team_share_a" }));
    const b = api(gw.url, await issuer.token({ ...TEAM_A, owner_id: "team_share_b" }));
    const topic = uniqueName();
    expect((await a.publish(topic, randomBytes(3 * MB))).status).toBe(201);
    const over = await a.publish(topic, randomBytes(2 * MB));
    expect(over.status).toBe(403);
    expect(await errorCode(over)).toBe("large_body_share_exceeded");
    expect((await b.publish(topic, randomBytes(3 * MB))).status).toBe(201);
    expect((await a.publish(topic, "small messages are not counted")).status).toBe(201);
    await a.call("DELETE", topic);
    await b.call("DELETE", topic);
  });

  it("cuts off an upload slower than the minimum rate with 408 and keeps nothing", async () => {
    const gw = await gateway({ minUploadBytesPerSecond: 1 * MB, minUploadWindowSeconds: 2 });
    const token = await issuer.token({ ...TEAM_A, owner_id: "team_slow" });
    const q = api(gw.url, token);
    const topic = uniqueName();
    const slow = await upload(gw.url, topic, 10 * MB, token);
    slow.req.write(randomBytes(2 * MB)); // then nothing
    const answer = await slow.done;
    expect(answer.status).toBe(408);
    expect(answer.body).toContain("request_timeout");
    // Its chunks are removed as the upload is cut off: the store's usage has none of them.
    const stored = async () =>
      (await gw.gateway.jetstream.bodies.sweep()).usage.get("team_slow/prj_1/production");
    await expect.poll(stored, { timeout: 10_000 }).toBeUndefined();
    expect((await q.receive(topic, "g")).status).toBe(204);
    slow.req.destroy();
  });

  it("keeps a slow upload above the minimum rate, lasting several windows, and stores it byte-exact", async () => {
    // A 2 s window at 100 kB/s: this upload brings about 1 MB/s (ten times the minimum, well
    // below a fast one) for about 6 s, three windows, and is never cut off.
    const windowMs = 2000;
    const gw = await gateway({ minUploadBytesPerSecond: 100_000, minUploadWindowSeconds: 2 });
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    const body = randomBytes(6 * MB);
    const piece = 100_000;
    const slow = await upload(gw.url, topic, body.length);
    const started = Date.now();
    for (let at = 0; at < body.length; at += piece) {
      await sleep(100);
      slow.req.write(body.subarray(at, at + piece));
    }
    slow.req.end();
    const answer = await slow.done;
    expect(answer.status, answer.body).toBe(201);
    // Longer than a window (a lower bound the pacing above makes certain).
    expect(Date.now() - started).toBeGreaterThan(windowMs);
    const { messageId } = JSON.parse(answer.body) as { messageId: string };
    const [p] = await parts(await q.receiveById(topic, "g", messageId));
    expect(p!.body.length).toBe(body.length);
    expect(p!.body.equals(body)).toBe(true);
    await q.call("DELETE", topic);
  });

  it("cuts off a stalled body within the inline limit with 408 too, and keeps nothing", async () => {
    const gw = await gateway({ minUploadBytesPerSecond: 1 * MB, minUploadWindowSeconds: 2 });
    const q = api(gw.url, await issuer.token());
    const topic = uniqueName();
    const slow = await upload(gw.url, topic, 4096);
    slow.req.write(randomBytes(100)); // then nothing
    const answer = await slow.done;
    expect(answer.status).toBe(408);
    expect(answer.body).toContain("request_timeout");
    expect((await q.receive(topic, "g")).status).toBe(204);
    slow.req.destroy();
  });

  it("holds large ingest to largeIngestBytesPerSecond", async () => {
    const gw = await gateway({ largeIngestBytesPerSecond: 4 * MB });
    const q = api(gw.url, await issuer.token());
    const started = performance.now();
    expect((await q.publish(uniqueName(), randomBytes(12 * MB))).status).toBe(201);
    // A second's burst, then 4 MB/s: at least two seconds for 12 MB (a lower bound only).
    expect(performance.now() - started).toBeGreaterThan(1800);
  });
});

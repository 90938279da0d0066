// The cap on large-body downloads a gateway streams at once (VQS_MAX_LARGE_DOWNLOADS, 1 here),
// against a real nats-server: a receive by ID of a large message at the cap is refused before
// anything is leased; a receive that already leased one waits for a slot, reading nothing from
// the store meanwhile, then streams it byte-exact; a waiting download whose client goes away
// frees its place and leaves its lease alone. Memory is asserted as counts (gauges), not times.
import { randomBytes } from "node:crypto";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { startGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, sleep, uniqueName } from "../../helpers/http.js";
import { metricValue, settledMetricValue } from "../../helpers/metrics.js";

const MB = 1_000_000;
/** largeBodyReadWindow (fixed): the chunks one download may hold. */
const READ_WINDOW = 4;

const fx = useGateways(1, { config: { maxLargeDownloads: 1, largeIngestBytesPerSecond: 0 } });
const url = () => fx.gateways[0]!.url;

/** A body larger than the sockets' buffers hold: a reader that stalls keeps its download open. */
let holdTopic = "";
let holdId = "";

beforeAll(async () => {
  holdTopic = uniqueName("hold");
  const res = await (await q()).publish(holdTopic, randomBytes(40 * MB));
  expect(res.status).toBe(201);
  holdId = ((await res.json()) as { messageId: string }).messageId;
});

async function q() {
  return api(url(), await fx.issuer.token());
}

const metric = (series: string, metricsUrl = fx.gateways[0]!.metricsUrl) =>
  metricValue(metricsUrl, series);

const STREAMS = "vqs_large_body_streams";
const WAITING = "vqs_large_body_downloads_waiting";
const READ_AHEAD = "vqs_large_body_read_ahead_chunks";

/** A POST whose answer the test reads itself: it pauses at the answer's first piece. Called
 * inside a test. */
async function stalledRequest(path: string, headers: Record<string, string>, base = url()) {
  let req: ClientRequest | null = null;
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    req = httpRequest(new URL(`${base}/api/v3/topic/${path}`), {
      method: "POST",
      agent: false,
    });
    req.on("response", resolve).on("error", reject);
    void fx.issuer.token().then((token) => {
      req!.setHeader("authorization", `Bearer ${token}`);
      for (const [k, v] of Object.entries(headers)) req!.setHeader(k, v);
      req!.end();
    });
  });
  res.pause();
  const close = () => void req!.destroy();
  // Hung up when the test ends, passed or failed, so one failure cannot leave the next test
  // without the gateway's download slot.
  onTestFinished(close);
  return { res, close };
}

/**
 * Takes the gateway's one download slot: the 40 MB body received by ID (a group of its own) by a
 * client that does not read it. `release` hangs up, which frees the slot (a test that fails
 * before its release hangs up as it ends: see stalledRequest).
 */
async function holdSlot() {
  const held = await stalledRequest(`${holdTopic}/consumer/${uniqueName("holder")}/id/${holdId}`, {
    accept: "multipart/mixed",
  });
  expect(held.res.statusCode).toBe(200);
  await expect.poll(() => metric(STREAMS), { timeout: 10_000 }).toBe(1);
  return {
    release: async () => {
      held.close();
      await expect.poll(() => metric(STREAMS), { timeout: 10_000 }).toBe(0);
    },
  };
}

async function publish(topic: string, body: Uint8Array | string): Promise<string> {
  const res = await (await q()).publish(topic, body);
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

describe("the cap on large downloads (VQS_MAX_LARGE_DOWNLOADS)", () => {
  it("refuses a receive by ID of a large message still at the cap after its wait with 503 and Retry-After, leasing nothing", async () => {
    const topic = uniqueName();
    const body = randomBytes(2 * MB);
    const id = await publish(topic, body);
    const small = await publish(topic, "small");
    const api = await q();
    const hold = await holdSlot();
    const busy = await api.receiveById(topic, "g", id);
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(await errorCode(busy)).toBe("large_body_busy");
    // A message with an inline body needs no slot.
    const [inline] = await parts(await api.receiveById(topic, "g", small));
    expect(inline!.body.toString()).toBe("small");
    await hold.release();
    // Untouched: not leased (no 409), first delivery, every byte.
    const [p] = await parts(await api.receiveById(topic, "g", id));
    expect(p!.headers.get("vqs-message-id")).toBe(id);
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
    expect(p!.body.equals(body)).toBe(true);
    expect(await metric(STREAMS)).toBe(0);
  });

  it("has a receive by ID at the cap wait for a slot freed within its wait, then stream byte-exact", async () => {
    const topic = uniqueName();
    const body = randomBytes(2 * MB);
    const id = await publish(topic, body);
    const api = await q();
    const hold = await holdSlot();
    const receiving = api.receiveById(topic, "g", id);
    await expect.poll(() => metric(WAITING), { timeout: 4000 }).toBe(1);
    await hold.release();
    const res = await receiving;
    expect(res.status).toBe(200);
    const [p] = await parts(res);
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
    expect(p!.body.equals(body)).toBe(true);
  });

  it("leases nothing for a receive by ID whose client leaves while it waits for a slot", async () => {
    const topic = uniqueName();
    const body = randomBytes(2 * MB);
    const id = await publish(topic, body);
    const hold = await holdSlot();
    const req = httpRequest(new URL(`${url()}/api/v3/topic/${topic}/consumer/g/id/${id}`), {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${await fx.issuer.token()}`, accept: "multipart/mixed" },
    });
    req.on("error", () => undefined);
    req.end();
    await expect.poll(() => metric(WAITING), { timeout: 4000 }).toBe(1);
    req.destroy();
    await expect.poll(() => metric(WAITING), { timeout: 4000 }).toBe(0);
    await hold.release();
    // Not leased (no 409), no delivery counted.
    const [p] = await parts(await (await q()).receiveById(topic, "g", id));
    expect(p!.headers.get("vqs-delivery-count")).toBe("1");
    expect(p!.body.equals(body)).toBe(true);
  });

  it("has a receive past the cap wait for a slot, reading nothing meanwhile, then stream byte-exact", async () => {
    const topic = uniqueName();
    const bodies = [randomBytes(3 * MB), randomBytes(3 * MB + 1)];
    for (const b of bodies) await publish(topic, b);
    const hold = await holdSlot();
    // The held download reads ahead until its reader's socket pushes back: sample it once still.
    const aheadHeld = await settledMetricValue(fx.gateways[0]!.metricsUrl, READ_AHEAD);
    expect(aheadHeld).toBeLessThanOrEqual(READ_WINDOW);
    const res = await (await q()).receive(topic, "g", { "vqs-max-messages": "2" });
    expect(res.status).toBe(200); // both leased; the first part's head is out
    const got = parts(res);
    await expect.poll(() => metric(WAITING), { timeout: 10_000 }).toBe(1);
    // Waiting costs no chunk: the one download under way holds its window, this one nothing.
    expect(await metric(STREAMS)).toBe(1);
    expect(await metric(READ_AHEAD)).toBe(aheadHeld);
    await hold.release();
    const received = await got;
    expect(received.map((p) => p.headers.get("vqs-delivery-count"))).toEqual(["1", "1"]);
    expect(received.map((p) => p.body.length)).toEqual(bodies.map((b) => b.length));
    expect(received[0]!.body.equals(bodies[0]!)).toBe(true);
    expect(received[1]!.body.equals(bodies[1]!)).toBe(true);
    expect(await metric(WAITING)).toBe(0);
    await expect.poll(() => metric(STREAMS), { timeout: 10_000 }).toBe(0);
  });

  it("frees the place of a waiting download whose client goes away, and leaves its lease alone", async () => {
    const topic = uniqueName();
    await publish(topic, randomBytes(2 * MB));
    const hold = await holdSlot();
    const waiting = await stalledRequest(`${topic}/consumer/g`, {
      accept: "application/x-ndjson",
      "vqs-visibility-timeout-seconds": "600",
    });
    expect(waiting.res.statusCode).toBe(200);
    await expect.poll(() => metric(WAITING), { timeout: 10_000 }).toBe(1);
    waiting.close();
    await expect.poll(() => metric(WAITING), { timeout: 10_000 }).toBe(0);
    expect(await metric(STREAMS)).toBe(1); // the holder's, and only it
    await hold.release();
    // Nothing was released: the message is still leased to the client that left.
    expect((await (await q()).receive(topic, "g")).status).toBe(204);
  });

  it("cuts off a download still waiting when its lease ends; the message comes back whole", async () => {
    const topic = uniqueName();
    const body = randomBytes(2 * MB);
    const id = await publish(topic, body);
    const api = await q();
    const hold = await holdSlot();
    const res = await api.receive(topic, "g", {
      accept: "application/x-ndjson",
      "vqs-visibility-timeout-seconds": "2",
    });
    expect(res.status).toBe(200);
    // The answer ends without its last chunk (never a complete body that is wrong).
    await expect(res.text()).rejects.toThrow();
    expect(await metric(WAITING)).toBe(0);
    await hold.release();
    // Its lease ran out by itself: delivered again, counted as such, byte-exact (NDJSON).
    let line: { messageId: string; deliveryCount: number; body: string } | null = null;
    await expect
      .poll(
        async () => {
          const again = await api.receive(topic, "g", { accept: "application/x-ndjson" });
          if (again.status === 200) line = JSON.parse(await again.text()) as typeof line;
          return again.status;
        },
        { timeout: 15_000 },
      )
      .toBe(200);
    expect(line!.messageId).toBe(id);
    expect(line!.deliveryCount).toBe(2);
    expect(Buffer.from(line!.body, "base64").equals(body)).toBe(true);
  });
});

describe("the minimum download rate (minDownloadBytesPerSecond)", () => {
  it("closes a reader that stops reading, freeing its slot, and lets a slow but legal one finish byte-exact", async () => {
    // A gateway of its own on the same NATS: 1 MB/s over 2 s windows, one download at a time.
    const gw = await startGateway(fx.nats.url, fx.issuer, {
      config: {
        maxLargeDownloads: 1,
        largeIngestBytesPerSecond: 0,
        minDownloadBytesPerSecond: 1 * MB,
        minDownloadWindowSeconds: 2,
      },
    });
    try {
      // The 40 MB body, received by a client that reads its first piece and no more: past what
      // the sockets' buffers take in the first window, nothing moves, and the gateway hangs up
      // (the client sees it once it reads again: the close comes after the buffered bytes).
      const stalled = await stalledRequest(
        `${holdTopic}/consumer/${uniqueName("staller")}/id/${holdId}`,
        { accept: "multipart/mixed", "vqs-visibility-timeout-seconds": "600" },
        gw.url,
      );
      expect(stalled.res.statusCode).toBe(200);
      await expect.poll(() => metric(STREAMS, gw.metricsUrl), { timeout: 10_000 }).toBe(1);
      // Two windows at most after the buffers filled; the slot is free again.
      await expect.poll(() => metric(STREAMS, gw.metricsUrl), { timeout: 15_000 }).toBe(0);
      let got = 0;
      const ended = await new Promise<string>((resolve) => {
        stalled.res.on("data", (c: Buffer) => (got += c.length));
        stalled.res.once("error", (err) => resolve(err.message));
        stalled.res.once("end", () => resolve("end"));
        stalled.res.resume();
      });
      expect(ended).toBe("aborted");
      expect(stalled.res.complete).toBe(false);
      expect(got).toBeLessThan(40 * MB);

      // The slot is free again, and a reader at 2.5 times the rate, over more than two windows
      // (10 MB at 2.5 MB/s), gets every byte.
      const topic = uniqueName();
      const body = randomBytes(10 * MB);
      const id = await publish(topic, body);
      const res = await api(gw.url, await fx.issuer.token()).receiveById(topic, "g", id);
      expect(res.status).toBe(200);
      const started = Date.now();
      const read: Uint8Array[] = [];
      let bytes = 0;
      for await (const chunk of res.body! as AsyncIterable<Uint8Array>) {
        read.push(chunk);
        bytes += chunk.byteLength;
        await sleep(Math.max(0, (bytes / (2.5 * MB)) * 1000 - (Date.now() - started)));
      }
      const [p] = await parts(new Response(Buffer.concat(read), { headers: res.headers }));
      expect(p!.headers.get("vqs-delivery-count")).toBe("1");
      expect(p!.body.equals(body)).toBe(true);
      expect(Date.now() - started).toBeGreaterThan(3000);
    } finally {
      await gw.close();
    }
  });
});

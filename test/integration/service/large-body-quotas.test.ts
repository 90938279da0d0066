// Large bodies against the tenant limits, on a real (current) nats-server: their bytes count
// against the namespace's and topic's storage quotas and the tenant's regional byte budget. A
// declared length without room is answered 429 before a byte is read; a chunked upload is cut
// off with the same 429 mid-stream; nothing of a refused body stays in the body store.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY_STREAM, bodyNamespaceFilter } from "../../../src/nats/core/naming.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, errorCodeOf, parts, sleep, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { eventually } from "../../helpers/wait.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

const MB = 1_000_000;
const TEAM = "team_lbq";

let nats: TestNats;
let issuer: TestIssuer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
  for (const g of gateways) await g.close();
  await issuer?.close();
  await nats?.dispose();
});

async function gateway(env: Record<string, string>, now?: () => number): Promise<TestGateway> {
  const g = await startGateway(nats.url, issuer, { env, ...(now ? { now } : {}) });
  gateways.push(g);
  return g;
}

const token = (project: string) => issuer.token({ owner_id: TEAM, project_id: project });

/** Chunks the namespace has in the body store. */
async function bodyChunks(project: string): Promise<number> {
  const ns = makeNamespace(TEAM, project, "production", null);
  try {
    const info = await jsm.streams.info(BODY_STREAM, {
      subjects_filter: bodyNamespaceFilter("iad1", ns),
    });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  } catch {
    return 0;
  }
}

interface Answer {
  status: number;
  code: string | null;
  retryAfter: string | null;
  /** Body bytes written before the answer came. */
  sent: number;
}

/**
 * A publish whose body is written by the test, `piece` bytes every `everyMs`: with
 * `declared`, Content-Length is sent; without, the body is chunked. Stops writing as soon as
 * the gateway answers (or closes the connection: status 0).
 */
async function upload(
  url: string,
  bearer: string,
  topic: string,
  total: number,
  o: { declared?: boolean; piece?: number; everyMs?: number; holdBody?: boolean } = {},
): Promise<Answer> {
  const piece = o.piece ?? 256 * 1024;
  let answered = false;
  let sent = 0;
  const headers: Record<string, string> = { authorization: `Bearer ${bearer}` };
  if (o.declared) headers["content-length"] = String(total);
  const req = request(new URL(`${url}/api/v3/topic/${topic}`), { method: "POST", headers });
  const done = new Promise<Answer>((resolve) => {
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => {
        const code = errorCodeOf(text);
        resolve({
          status: res.statusCode ?? 0,
          code,
          retryAfter: res.headers["retry-after"] ?? null,
          sent,
        });
      });
    });
    req.on("error", () => {
      answered = true;
      resolve({ status: 0, code: null, retryAfter: null, sent });
    });
  });
  req.flushHeaders();
  if (!o.holdBody) {
    while (!answered && sent < total) {
      const n = Math.min(piece, total - sent);
      await new Promise<void>((r) => req.write(Buffer.alloc(n, 7), () => r()));
      sent += n;
      await sleep(o.everyMs ?? 5);
    }
    if (!answered) req.end();
  }
  let answer: Answer | null = null;
  void done.then((a) => (answer = a));
  const came = await eventually(() => answer !== null, 20_000, 5);
  req.destroy();
  if (!came || !answer) throw new Error("no answer within 20 s");
  return answer;
}

describe("large bodies against storage quotas", () => {
  it("counts large-body bytes against the namespace and topic quotas, before and during the upload", async () => {
    const gw = await gateway({
      VQS_NAMESPACE_MAX_BYTES: String(2.5 * MB),
      VQS_TOPIC_MAX_BYTES: String(2.5 * MB),
    });
    const t = await token("prj_quota");
    const q = api(gw.url, t);
    const topic = uniqueName();

    // 2 MB fits the 2.5 MB quota.
    const first = await upload(gw.url, t, topic, 2 * MB, { declared: true });
    expect(first.status).toBe(201);
    const stored = await bodyChunks("prj_quota");
    expect(stored).toBeGreaterThanOrEqual(8);

    // Another 2 MB declared: refused before a byte of it is read.
    const declared = await upload(gw.url, t, topic, 2 * MB, { declared: true, holdBody: true });
    expect(declared.status).toBe(429);
    expect(declared.code).toBe("topic_full");
    expect(Number(declared.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(declared.sent).toBe(0);

    // The same bytes chunked to another topic of the namespace: cut off mid-stream with the
    // namespace's code, and nothing of it stays.
    const chunked = await upload(gw.url, t, uniqueName(), 10 * MB);
    expect(chunked.sent).toBeLessThan(10 * MB);
    if (chunked.status !== 0) {
      expect(chunked.status).toBe(429);
      expect(chunked.code).toBe("storage_quota_exceeded");
      expect(Number(chunked.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    await expect.poll(() => bodyChunks("prj_quota")).toBe(stored);

    // Large bodies count for small messages too: 600 kB more does not fit.
    const small = await q.publish(uniqueName(), Buffer.alloc(600_000));
    expect(small.status).toBe(429);
    expect(await errorCode(small)).toBe("storage_quota_exceeded");

    // A gateway started now reads the body store: the same refusal at once.
    const fresh = await gateway({
      VQS_NAMESPACE_MAX_BYTES: String(2.5 * MB),
      VQS_OPERATOR_TEAMS: TEAM, // for the namespaces listing below
    });
    const again = await api(fresh.url, t).publish(uniqueName(), Buffer.alloc(600_000));
    expect(again.status).toBe(429);
    expect(await errorCode(again)).toBe("storage_quota_exceeded");

    // The storage shown (topics page: `vqs topics`, the console; namespaces: `vqs namespaces`)
    // counts the large body, which is in no topic's size, and says how much of it that is.
    type Storage = { usedBytes: number; largeBodyBytes: number; limitBytes: number };
    const get = async <T>(path: string) =>
      (await (
        await fetch(`${fresh.url}/api/v3/${path}`, { headers: { authorization: `Bearer ${t}` } })
      ).json()) as T;
    const page = await get<{ storage: Storage; topics: { bytes: number }[] }>("topics");
    expect(page.storage.largeBodyBytes).toBeGreaterThanOrEqual(2 * MB);
    const topicBytes = page.topics.reduce((n, x) => n + x.bytes, 0);
    expect(page.storage.usedBytes).toBe(topicBytes + page.storage.largeBodyBytes);
    const listed = await get<{ namespaces: { project: string; storage: Storage }[] }>("namespaces");
    const mine = listed.namespaces.find((n) => n.project === "prj_quota")!;
    expect(mine.storage.largeBodyBytes).toBe(page.storage.largeBodyBytes);
    expect(mine.storage.usedBytes).toBeGreaterThan(2 * MB);

    // Another namespace stores large bodies as usual, and the first one's body reads back.
    const other = await upload(gw.url, await token("prj_other"), uniqueName(), 2 * MB, {
      declared: true,
    });
    expect(other.status).toBe(201);
    const got = await parts(await q.receive(topic, "g"));
    expect(got.length).toBe(1);
    expect(got[0]!.body.length).toBe(2 * MB);
  });
});

describe("large bodies against the regional byte budget", () => {
  it("refuses a declared body while the tenant's bytes drain, and cuts off a chunked body that outruns the budget", async () => {
    // The gateway's clock, which its byte buckets drain on: moved on by the test.
    let ahead = 0;
    const gw = await gateway(
      {
        VQS_RATE_LIMIT_BYTES_PER_SECOND_PER_TENANT: String(2 * MB),
        VQS_NAMESPACE_MAX_BYTES: "0",
        VQS_TOPIC_MAX_BYTES: "0",
      },
      () => Date.now() + ahead,
    );
    const t = await token("prj_budget");
    const topic = uniqueName();

    // A body larger than a second's budget is taken when the tenant has spent nothing...
    expect((await upload(gw.url, t, topic, 4 * MB, { declared: true })).status).toBe(201);
    // ...and holds the next one back until its bytes have drained (about 2 s), unread.
    const held = await upload(gw.url, t, topic, 2 * MB, { declared: true, holdBody: true });
    expect(held.status).toBe(429);
    expect(held.code).toBe("rate_limited");
    expect(Number(held.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(held.sent).toBe(0);
    ahead += 4000; // the tenant's bytes have drained

    // A chunked body sent as fast as it goes (far above 2 MB/s) is cut off; nothing stays.
    const before = await bodyChunks("prj_budget");
    const cut = await upload(gw.url, t, uniqueName(), 8 * MB, { everyMs: 20 });
    expect(cut.sent).toBeLessThan(8 * MB);
    if (cut.status !== 0) {
      expect(cut.status).toBe(429);
      expect(cut.code).toBe("rate_limited");
      expect(Number(cut.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    await expect.poll(() => bodyChunks("prj_budget")).toBe(before);
    ahead += 4000; // drained again

    // One paced within the budget (1 MB/s) is taken whole.
    const paced = await upload(gw.url, t, uniqueName(), 1.5 * MB, { piece: 250_000, everyMs: 250 });
    expect(paced.status).toBe(201);
  });
});

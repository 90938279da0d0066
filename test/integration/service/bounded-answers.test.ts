// Every answer bounded in bytes, on a gateway process whose V8 heap is sized like the chart's pod
// (512 MiB memory limit: Node gives such a cgroup about 256 MB of old generation, so the process
// runs with --max-old-space-size=256):
// - six concurrent full-payload peeks of 100 messages of 1 MB each leave the gateway alive and
//   answering: each page is cut at its byte budget (and says so), full peeks past the gateway's
//   share answer 503 peek_busy with Retry-After, and paging on reads every message once;
// - a batch whose large part is refused before its end is answered without the rest of the body
//   being read;
// - inline parts held by batches at once are bounded for the whole gateway.
// On the current nats-server lane only: large bodies need nats-server 2.11.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGatewayProcesses, spawnGateway } from "../../helpers/processes/gateway-process.js";
import { api, errorCodeOf, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { memoryTmpDir, startTestNats, type TestNats } from "../../helpers/processes/nats.js";

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

const part = (body: string | Buffer) =>
  Buffer.concat([
    Buffer.from("--b-9\r\nContent-Type: application/octet-stream\r\n\r\n"),
    Buffer.from(body),
    Buffer.from("\r\n"),
  ]);
const END = Buffer.from("--b-9--\r\n");

interface Sent {
  /** The answer: status, headers and body; status 0 if the connection broke first. */
  readonly answer: Promise<{ status: number; headers: Record<string, unknown>; body: string }>;
  write(chunk: Buffer): Promise<void>;
  end(): void;
  destroy(): void;
}

/** A batch whose body the test writes piece by piece (chunked), answered as it comes. */
function openBatch(url: string, token: string, topic: string): Sent {
  const req = httpRequest(new URL(`${url}/api/v3/topic/${topic}/batch`), {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "multipart/mixed; boundary=b-9",
      "transfer-encoding": "chunked",
    },
  });
  const answer = new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve) => {
      req.on("response", (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on("error", () => resolve({ status: 0, headers: {}, body: "" }));
      req.on("close", () => resolve({ status: 0, headers: {}, body: "" })); // (if not answered)
    },
  );
  return {
    answer,
    // Settles once written, or once the connection is gone (a refusal closes it).
    write: (chunk) =>
      new Promise<void>((resolve) => {
        if (req.destroyed) return resolve();
        req.once("close", () => resolve());
        req.write(chunk, () => resolve());
      }),
    end: () => req.end(),
    destroy: () => req.destroy(),
  };
}

describe("batch publish on a pod-sized heap", () => {
  it("answers a batch whose large part is refused without reading the rest of its body", async () => {
    const gw = await spawnGateway(
      nats.url,
      issuer,
      { VQS_MAX_MESSAGE_BYTES: String(2_000_000) },
      POD_HEAP,
    );
    const token = await issuer.token();
    const topic = uniqueName("refused-part");
    const batch = openBatch(gw.url, token, topic);
    let answered = false;
    void batch.answer.then(() => (answered = true));
    try {
      await batch.write(part("first"));
      await batch.write(Buffer.from("--b-9\r\nContent-Type: application/octet-stream\r\n\r\n"));
      // The large part goes on and on, well above the minimum upload rate: read on, it would
      // hold the batch open for as long as its client likes.
      let sent = 0;
      const piece = randomBytes(64 * 1024);
      for (let i = 0; i < 2_000 && !answered; i++) {
        await batch.write(piece);
        sent += piece.length;
      }
      const a = await batch.answer;
      expect(a.status, a.body).toBe(413);
      expect(errorCodeOf(a.body)).toBe("payload_too_large");
      expect(a.headers.connection).toBe("close");
      // Answered soon after the part passed the limit, not after the 130 MB the client had.
      expect(sent).toBeLessThan(40_000_000);
    } finally {
      batch.destroy();
    }
    // Nothing of the batch stored; the gateway goes on.
    const client = api(gw.url, token);
    expect((await client.receive(topic, "g")).status).toBe(204);
    expect((await client.publish(topic, "after")).status).toBe(201);
    expect(gw.child.exitCode).toBeNull();
  }, 60_000);

  it("bounds the inline parts all batches of the gateway hold at once: 503 batch_busy past it", async () => {
    const gw = await spawnGateway(nats.url, issuer, {}, POD_HEAP);
    const token = await issuer.token();
    // 15 parts of 1 MB: within one batch's maxBatchBytes (16 MiB), held until the end.
    const parts15 = Buffer.concat(Array.from({ length: 15 }, () => part(randomBytes(1_000_000))));
    const holders = Array.from({ length: 3 }, () => openBatch(gw.url, token, uniqueName("holder")));
    try {
      // Three batches hold their parts, their close delimiter not sent.
      await Promise.all(holders.map((h) => h.write(parts15)));
      // A whole batch beside them: refused once the holders' parts are held.
      const probe = async () => {
        const b = openBatch(gw.url, token, uniqueName("probe"));
        try {
          await b.write(parts15);
          await b.write(END);
          b.end();
          const a = await b.answer;
          if (a.status === 503) expect(Number(a.headers["retry-after"])).toBeGreaterThanOrEqual(1);
          return `${a.status} ${errorCodeOf(a.body) ?? ""}`.trim();
        } finally {
          b.destroy();
        }
      };
      await expect.poll(probe, { timeout: 30_000, interval: 200 }).toBe("503 batch_busy");
      expect(gw.child.exitCode).toBeNull();
    } finally {
      for (const h of holders) h.destroy();
    }
    // The holders gone, their bytes are free again.
    const probeOk = async () => {
      const b = openBatch(gw.url, token, uniqueName("after"));
      try {
        await b.write(Buffer.concat([part("one"), part(randomBytes(1_000_000)), END]));
        b.end();
        return (await b.answer).status;
      } finally {
        b.destroy();
      }
    };
    await expect.poll(probeOk, { timeout: 15_000, interval: 200 }).toBe(200);
  }, 90_000);
});

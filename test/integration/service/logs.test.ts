// Structured logs: one JSON object per line, every request line carries its request ID (also
// sent back as x-request-id), and neither bearer tokens nor receipt handles appear in full;
// requestLogs: false (the benchmark's, fixed on in production) drops the two lines of every request, not its errors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;
const lines: string[] = [];

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  const logger = createLogger("info", { write: (line: string) => void lines.push(line) });
  gw = await startGateway(nats.url, issuer, { logger });
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

describe("logs", () => {
  it("are JSON with request IDs, and never hold a token or a receipt handle in full", async () => {
    const token = await issuer.token();
    const q = api(gw.url, token);
    const topic = uniqueName();
    await q.publish(topic, "x");
    const [p] = await parts(await q.receive(topic, "g"));
    const handle = p!.headers.get("vqs-receipt-handle")!;
    const ack = await q.call("DELETE", `${topic}/consumer/g/lease/${handle}`, {
      headers: { "x-request-id": "req-under-test" },
    });
    expect(ack.status).toBe(204);
    expect(ack.headers.get("x-request-id")).toBe("req-under-test");
    await q.ack(topic, "g", "forged-handle-forged-handle");

    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const requestLines = entries.filter((e) => e.reqId !== undefined);
    expect(requestLines.length).toBeGreaterThanOrEqual(8);
    expect(entries.some((e) => e.reqId === "req-under-test")).toBe(true);
    const all = lines.join("\n");
    expect(all).not.toContain(token);
    expect(all).not.toContain(handle);
    expect(all).toContain(`/lease/${handle.slice(0, 8)}…`);
  });

  it("without request lines (requestLogs: false), a request logs only its errors", async () => {
    const quiet: string[] = [];
    const logger = createLogger("info", { write: (line: string) => void quiet.push(line) });
    const gw2 = await startGateway(nats.url, issuer, { logger, config: { requestLogs: false } });
    try {
      const q = api(gw2.url, await issuer.token());
      const topic = uniqueName();
      expect((await q.publish(topic, "x")).status).toBe(201);
      const [p] = await parts(await q.receive(topic, "g"));
      expect((await q.ack(topic, "g", p!.headers.get("vqs-receipt-handle")!)).status).toBe(204);
      const entries = quiet.map((l) => JSON.parse(l) as Record<string, unknown>);
      // The same calls logged request lines on the gateway above (the first case).
      expect(entries.filter((e) => e.reqId !== undefined)).toEqual([]);
    } finally {
      await gw2.close();
    }
  });
});

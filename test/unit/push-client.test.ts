// The outbound push request (PushClient) against a local node:http server: the outcome of each
// kind of answer, redirects not followed, at most a few KiB of an answer read, and the push's
// timeout over the whole exchange (before and after the status line).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushAddressPolicy } from "../../src/outbound/push-address-policy.js";
import { PushClient } from "../../src/outbound/push-client.js";

type Route = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Route>();
const hits: string[] = [];
const server = createServer((req, res) => {
  hits.push(req.url ?? "");
  req.resume();
  req.on("end", () => (routes.get(req.url ?? "") ?? ((_q, r) => r.writeHead(404).end()))(req, res));
});
let base = "";
const client = new PushClient({ policy: new PushAddressPolicy([]) });

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const body = Buffer.from("payload");
const post = (path: string, timeoutMs = 2000) =>
  client.post(`${base}${path}`, { "content-type": "text/plain" }, body, timeoutMs);

describe("PushClient", () => {
  it("answers success for 2xx and the status class otherwise", async () => {
    routes.set("/ok", (_q, r) => r.writeHead(204).end());
    routes.set("/gone", (_q, r) => r.writeHead(410).end("{}"));
    routes.set("/fail", (_q, r) => r.writeHead(503).end());
    expect(await post("/ok")).toEqual({ outcome: "success", status: 204 });
    expect(await post("/gone")).toEqual({ outcome: "http_4xx", status: 410 });
    expect(await post("/fail")).toEqual({ outcome: "http_5xx", status: 503 });
  });

  it("sends the body and headers as given", async () => {
    let seen: { type?: string; length?: string } = {};
    routes.set("/echo", (q, r) => {
      seen = { type: q.headers["content-type"], length: q.headers["content-length"] };
      r.writeHead(200).end();
    });
    await post("/echo");
    expect(seen).toEqual({ type: "text/plain", length: String(body.length) });
  });

  it("does not follow a redirect", async () => {
    routes.set("/moved", (_q, r) => r.writeHead(307, { location: `${base}/target` }).end());
    routes.set("/target", (_q, r) => r.writeHead(200).end());
    hits.length = 0;
    expect(await post("/moved")).toEqual({ outcome: "http_3xx", status: 307 });
    expect(hits).toEqual(["/moved"]);
  });

  it("decides by the status without reading a large answer to its end", async () => {
    // 64 MiB that would take far longer than the timeout to send at this pace.
    routes.set("/large", (_q, r) => {
      r.writeHead(200, { "content-length": String(64 * 1024 * 1024) });
      const chunk = Buffer.alloc(16 * 1024, 120);
      const timer = setInterval(() => r.write(chunk), 20);
      r.on("close", () => clearInterval(timer));
    });
    const t = performance.now();
    expect(await post("/large", 5000)).toEqual({ outcome: "success", status: 200 });
    expect(performance.now() - t).toBeLessThan(2000);
  });

  it("counts no answer within the timeout as a timeout", async () => {
    routes.set("/hang", () => undefined);
    const t = performance.now();
    expect(await post("/hang", 300)).toEqual({ outcome: "timeout", status: null });
    expect(performance.now() - t).toBeLessThan(2000);
  });

  it("keeps the status of an answer whose body is still arriving at the timeout", async () => {
    routes.set("/slow-body", (_q, r) => {
      r.writeHead(500, { "content-length": "100" });
      r.write("x"); // and nothing more
    });
    expect(await post("/slow-body", 300)).toEqual({ outcome: "http_5xx", status: 500 });
  });

  it("counts a refused connection as a connection error", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await client.post(`http://127.0.0.1:${port}/`, {}, body, 2000)).toEqual({
      outcome: "connection_error",
      status: null,
    });
  });
});

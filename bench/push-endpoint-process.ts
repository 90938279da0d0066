// A push endpoint for the benchmark, in its own process so that its CPU is measured apart from
// the gateway's and the load generator's. Started by bench/lib/push/endpoints.ts as
// `node --import tsx bench/push-endpoint-process.ts <mode>`:
//   plain     a node:http server answering 200 with an empty body to every POST (a webhook for
//             `push.autoAck: true`): the least an endpoint can cost.
//   callback  a node:http server whose route is the real `@vercel/queue` client's
//             QueueClient.handleCallback (Fetch-style, as a Next.js route gets it), with the
//             Buffer transport and a no-op handler: the client acknowledges each message through
//             the gateway's API ($VQS_BENCH_GATEWAY_URL, token $VQS_BENCH_TOKEN).
// It counts answered pushes and, for payloads carrying a send time (see lib/push/stamp.ts), records
// the latency from the send to the handler. IPC with the parent:
//   -> {type: "listening", url}
//   <- {type: "read", id, takeLatencies}
//   -> {type: "read", id, at, ok, failed, latencies}   (at: this process's clock, ms since epoch)
// Exits when the parent goes away or on SIGTERM.
import { BufferTransport, QueueClient } from "@vercel/queue";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { latencyOf, nowMs } from "./lib/push/stamp.js";

const mode = process.argv[2];
if (mode !== "plain" && mode !== "callback") {
  throw new Error(`push-endpoint-process: mode is plain or callback (got ${String(mode)})`);
}

/** Latency samples kept at most (the latency phase sends a few hundred). */
const MAX_LATENCIES = 100_000;
let ok = 0;
let failed = 0;
const latencies: number[] = [];

function note(payload: Uint8Array): void {
  const ms = latencyOf(payload);
  if (ms !== null && latencies.length < MAX_LATENCIES) latencies.push(ms);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function plain(req: IncomingMessage, res: ServerResponse): void {
  readBody(req).then(
    (body) => {
      note(body);
      ok++;
      res.writeHead(200, { "content-length": "0" }).end();
    },
    () => {
      failed++;
      res.destroy();
    },
  );
}

function callbackRoute(): (req: IncomingMessage, res: ServerResponse) => void {
  const gateway = process.env.VQS_BENCH_GATEWAY_URL;
  const token = process.env.VQS_BENCH_TOKEN;
  if (!gateway || !token) {
    throw new Error("callback mode needs VQS_BENCH_GATEWAY_URL and VQS_BENCH_TOKEN");
  }
  const client = new QueueClient({
    region: "bench1",
    token,
    deploymentId: null,
    resolveBaseUrl: () => new URL(gateway),
    transport: new BufferTransport(),
  });
  // The handler does nothing but note the latency: what is measured is the client's own work
  // (parsing the CloudEvent, acknowledging through the API) and the gateway's.
  const handle = client.handleCallback((payload: unknown) => {
    note(payload as Buffer);
  });
  return (req, res) => {
    void (async () => {
      try {
        const body = await readBody(req);
        // As a framework hands a route its request: a Fetch Request built from node:http's.
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) {
          if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
        }
        const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, {
          method: req.method ?? "POST",
          headers,
          ...(body.length ? { body } : {}),
        });
        const response = await handle(request);
        const answer = Buffer.from(await response.arrayBuffer());
        if (response.status >= 200 && response.status < 300) ok++;
        else failed++;
        res.writeHead(response.status, {
          "content-type": response.headers.get("content-type") ?? "application/json",
          "content-length": String(answer.length),
        });
        res.end(answer);
      } catch {
        failed++;
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      }
    })();
  };
}

const route = mode === "plain" ? plain : callbackRoute();
const server = createServer({ keepAliveTimeout: 65_000 }, route);
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/${mode}`;

function stop(): void {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("disconnect", stop);
process.on("message", (m: unknown) => {
  const msg = m as { type?: string; id?: number; takeLatencies?: boolean } | null;
  if (msg?.type !== "read") return;
  process.send?.({
    type: "read",
    id: msg.id,
    at: nowMs(),
    ok,
    failed,
    latencies: msg.takeLatencies ? latencies.splice(0) : [],
  });
});
process.send?.({ type: "listening", url });

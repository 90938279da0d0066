// The benchmark's push endpoint, in its own process so that its CPU is measured apart from the
// gateway's and the load generator's: a node:http server answering 200 with an empty body to
// every POST (a webhook for `push.autoAck: true`), the least an endpoint can cost. Started by
// bench/lib/push/endpoints.ts as `node --import tsx bench/push-endpoint-process.ts`.
// It counts answered pushes and, for payloads carrying a send time (see lib/push/stamp.ts), records
// the latency from the send to the handler. IPC with the parent:
//   -> {type: "listening", url}
//   <- {type: "read", id, takeLatencies}
//   -> {type: "read", id, at, ok, failed, latencies}   (at: this process's clock, ms since epoch)
// Exits when the parent goes away or on SIGTERM.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { latencyOf, nowMs } from "./lib/push/stamp.js";

/** Latency samples kept at most (the latency phase sends a few hundred). */
const MAX_LATENCIES = 100_000;
let ok = 0;
let failed = 0;
const latencies: number[] = [];

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const ms = latencyOf(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    if (ms !== null && latencies.length < MAX_LATENCIES) latencies.push(ms);
    ok++;
    res.writeHead(200, { "content-length": "0" }).end();
  });
  req.on("error", () => {
    failed++;
    res.destroy();
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/plain`;

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

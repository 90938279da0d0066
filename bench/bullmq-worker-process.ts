// The BullMQ side of `npm run bench:bullmq`: a BullMQ Worker in a process of its own (as the push
// endpoint is), so its CPU is measured apart. `node --import tsx bench/bullmq-worker-process.ts
// <redis port> <queue> <concurrency>`: processes every job with a handler that does nothing (as
// the plain push endpoint answers 200 and nothing else) once told to ({type: "run"}: the jobs are
// added first, as the gateway's backlog is published first), and tells the parent over IPC how
// many it completed, every 50 ms ({type: "count", completed}). Exits when the parent goes away.
import { Worker } from "bullmq";

const [port, queue, concurrency] = process.argv.slice(2);
let completed = 0;
const worker = new Worker(queue ?? "bench", () => Promise.resolve(), {
  connection: { host: "127.0.0.1", port: Number(port) },
  concurrency: Number(concurrency),
  autorun: false,
});
worker.on("completed", () => void completed++);
worker.on("error", (err) => process.stderr.write(`worker error: ${String(err)}\n`));
const timer = setInterval(() => process.send?.({ type: "count", completed }), 50);
process.on("message", (m: { type?: string }) => {
  if (m.type === "run") void worker.run();
});
process.send?.({ type: "ready" });
process.on("disconnect", () => {
  clearInterval(timer);
  void worker.close().finally(() => process.exit(0));
});

// Loaded into bench:workflow's app processes (NODE_OPTIONS=--import): how long the process takes
// to answer each request it serves, by path (a queue delivery is a POST to the flow or step
// route: the handler, with whatever the queue's client does before answering), and how busy its
// one thread was (event loop utilization, and the loop's delay). Written on exit to
// $VQS_BENCH_TIMING_DIR/<pid>.json; plain JavaScript, as the app is.
import { writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks";

const dir = process.env.VQS_BENCH_TIMING_DIR;
/** path -> { n, sumMs } */
const byPath = new Map();
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const elu0 = performance.eventLoopUtilization();
// Every 100 ms: [time (epoch ms), utilization over those 100 ms], so that the bench can read how
// busy the thread was over its measured window alone (the process's life adds its start, the
// warm-up run and the wait to be stopped, which differ between the two queues).
const timeline = [];
let last = elu0;
setInterval(() => {
  const now = performance.eventLoopUtilization();
  timeline.push([Date.now(), performance.eventLoopUtilization(now, last).utilization]);
  last = now;
}, 100).unref();

// Garbage collections by kind (minor, major, incremental, weak callbacks), with their start
// times, so the bench can count those of its measured window.
const GC_KINDS = { 1: "minor", 4: "major", 8: "incremental", 16: "weakcb" };
const gcs = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = GC_KINDS[e.detail?.kind] ?? "other";
    gcs.push([performance.timeOrigin + e.startTime, kind, e.duration]);
  }
}).observe({ entryTypes: ["gc"] });

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event === "request") {
    const t0 = performance.now();
    const path = (req.url ?? "/").split("?")[0].replace(/\/wrun_[A-Za-z0-9]+$/, "/:runId");
    res.once("finish", () => {
      const s = byPath.get(path) ?? { n: 0, sumMs: 0 };
      s.n++;
      s.sumMs += performance.now() - t0;
      byPath.set(path, s);
    });
  }
  return emit.apply(this, arguments);
};

process.on("exit", () => {
  if (!dir) return;
  const elu = performance.eventLoopUtilization(elu0);
  writeFileSync(
    join(dir, `${process.pid}.json`),
    JSON.stringify({
      requests: Object.fromEntries(byPath),
      eventLoopUtilization: elu.utilization,
      timeline,
      gcs,
      eventLoopDelayMs: { mean: delay.mean / 1e6, p99: delay.percentile(99) / 1e6 },
    }),
  );
});

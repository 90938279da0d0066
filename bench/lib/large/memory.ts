// A gateway's resident memory while transfers run: sampled from /proc every few milliseconds,
// the peak kept, so a transfer that held a whole body even briefly shows in the figure.
import { sampleProc } from "../proc.js";

export interface RssWatch {
  /** Stops sampling; the highest RSS seen (bytes). */
  stop(): number;
}

export function watchRss(pid: number, everyMs = 20): RssWatch {
  let peak = sampleProc(pid)?.rssBytes ?? 0;
  const timer = setInterval(() => {
    const rss = sampleProc(pid)?.rssBytes ?? 0;
    if (rss > peak) peak = rss;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const rss = sampleProc(pid)?.rssBytes ?? 0;
      return Math.max(peak, rss);
    },
  };
}

/** Least-squares slope of y over x (bytes per transfer, from peaks at 1, 2, 4 transfers). */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/**
 * The gateway's own `process.memoryUsage()` sampled over IPC while transfers run, each sample after
 * a forced full collection (the gateway runs with --expose-gc), so the peaks are what the
 * transfers keep alive, not garbage the collector has not reached yet: the highest RSS, and the
 * highest heapUsed + external (what JavaScript keeps), in bytes.
 */
export function watchMemory(
  gw: { memory(): Promise<NodeJS.MemoryUsage | null> },
  everyMs: number,
): { stop(): Promise<{ rss: number; js: number }> } {
  const peaks = { rss: 0, js: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      const m = await gw.memory();
      if (m) {
        peaks.rss = Math.max(peaks.rss, m.rss);
        peaks.js = Math.max(peaks.js, m.heapUsed + m.external);
      }
      const rest = everyMs - (performance.now() - t);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peaks;
    },
  };
}

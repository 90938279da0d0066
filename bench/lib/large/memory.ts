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

/** The highest of each `process.memoryUsage()` figure seen, in bytes. */
export interface MemoryPeaks {
  rss: number;
  heapUsed: number;
  /** Memory of C++ objects bound to JS, Buffers' and ArrayBuffers' bytes included. */
  external: number;
  arrayBuffers: number;
  /** heapUsed + external in one sample: what JavaScript holds (after a GC: what it keeps). */
  js: number;
  /** The gateway's vqs_large_body_read_ahead_chunks: chunks asked for or held for readers. */
  readAheadChunks: number;
}

export interface MemorySampler {
  memory(): Promise<NodeJS.MemoryUsage | null>;
  memoryNow(): Promise<NodeJS.MemoryUsage | null>;
}

/**
 * The gateway's own `process.memoryUsage()` sampled over IPC while transfers run. With `gc`, each
 * sample comes after a forced full collection (the gateway runs with --expose-gc), so the peaks
 * are what the transfers keep alive, not garbage the collector has not reached yet; without it,
 * the figures as they are, garbage included.
 */
export function watchMemory(
  gw: MemorySampler,
  o: { gc: boolean; everyMs: number; metricsUrl?: string },
): { stop(): Promise<MemoryPeaks & { samples: number }> } {
  const peaks: MemoryPeaks = {
    rss: 0,
    heapUsed: 0,
    external: 0,
    arrayBuffers: 0,
    js: 0,
    readAheadChunks: 0,
  };
  let samples = 0;
  let running = true;
  const take = async () => {
    const m = await (o.gc ? gw.memory() : gw.memoryNow());
    if (!m) return;
    samples++;
    peaks.rss = Math.max(peaks.rss, m.rss);
    peaks.heapUsed = Math.max(peaks.heapUsed, m.heapUsed);
    peaks.external = Math.max(peaks.external, m.external);
    peaks.arrayBuffers = Math.max(peaks.arrayBuffers, m.arrayBuffers);
    peaks.js = Math.max(peaks.js, m.heapUsed + m.external);
    if (!o.metricsUrl) return;
    const text = await fetch(o.metricsUrl)
      .then((r) => r.text())
      .catch(() => "");
    const chunks = Number(/^vqs_large_body_read_ahead_chunks (\S+)$/m.exec(text)?.[1] ?? NaN);
    if (Number.isFinite(chunks)) peaks.readAheadChunks = Math.max(peaks.readAheadChunks, chunks);
  };
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await take();
      const rest = o.everyMs - (performance.now() - t);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { ...peaks, samples };
    },
  };
}

// `npm run bench:profile [-- <file.cpuprofile | dir>]`: where a gateway process spent its CPU,
// from the V8 profile `npm run bench -- --cpu-prof` writes (bench/results/profiles/ by default).
// Prints self time by module (src/ files, packages, Node internals) and the hottest functions.
import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly hitCount?: number;
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
}

const DEFAULT_DIR = join(dirname(fileURLToPath(import.meta.url)), "results", "profiles");

/** The profiles to read: the file given, or the main-thread profiles of the newest run in a
 * directory (a --cpu-prof run writes one per thread; tsx's loader thread is nearly idle). */
async function profilesIn(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const files = (await readdir(path)).filter((f) => f.endsWith(".cpuprofile"));
  if (files.length === 0) throw new Error(`no .cpuprofile in ${path}`);
  const dated = await Promise.all(
    files.map(async (f) => ({ f: join(path, f), t: (await stat(join(path, f))).mtimeMs })),
  );
  const newest = Math.max(...dated.map((d) => d.t));
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
  return dated
    .filter((d) => newest - d.t < 120_000 && /\.\d+\.0\.\d+\.cpuprofile$/.test(d.f))
    .map((d) => d.f);
}

function moduleOf(url: string, fn: string): string {
  if (!url) return fn.startsWith("(") ? fn : "(native)";
  if (url.startsWith("node:")) return url;
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  const src = /\/(src|bench)\/(.+)$/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  return url;
}

async function summarize(file: string): Promise<void> {
  const p = JSON.parse(await readFile(file, "utf8")) as Profile;
  const totalSamples = p.samples?.length ?? p.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const seconds = (p.endTime - p.startTime) / 1e6;
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const n of p.nodes) {
    const hits = n.hitCount ?? 0;
    if (!hits) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const mod = moduleOf(url, functionName);
    if (mod === "(idle)") continue;
    byModule.set(mod, (byModule.get(mod) ?? 0) + hits);
    const key = `${functionName || "(anonymous)"}  ${mod}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
  }
  const busy = [...byModule.values()].reduce((s, h) => s + h, 0);
  // Shares of the busy (not idle) time.
  const pct = (h: number) => ((h / Math.max(1, busy)) * 100).toFixed(1).padStart(5) + "%";
  const top = (m: Map<string, number>, k: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, k);
  process.stdout.write(
    `${file}\n${seconds.toFixed(1)} s profiled, busy ${((busy / Math.max(1, totalSamples)) * 100).toFixed(1)}% ` +
      `of the time; shares below are of the busy time.\n\nSelf time by module:\n`,
  );
  for (const [m, h] of top(byModule, 25)) process.stdout.write(`  ${pct(h)}  ${m}\n`);
  process.stdout.write("\nHottest functions (self time):\n");
  for (const [f, h] of top(byFunction, 30)) process.stdout.write(`  ${pct(h)}  ${f}\n`);
  process.stdout.write("\n");
}

async function main(): Promise<void> {
  const files = await profilesIn(process.argv[2] ?? DEFAULT_DIR);
  if (files.length === 0) throw new Error("no main-thread profile found");
  for (const f of files) await summarize(f);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

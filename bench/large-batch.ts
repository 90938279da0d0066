// `npm run bench:large-batch [-- --mb 100 --rounds 3]`: a 100 MB part inside a batch publish
// (small parts around it, chunked, no Content-Length) against the same 100 MB as a single
// chunked publish, in one run on one gateway process: the gateway's peak RSS growth and MB/s of
// each, and their ratio (batch / single). Target: the batch part costs the gateway no more
// memory than a single upload (ratio ≤ 1.5). Never part of `npm test`; everything on 127.0.0.1.
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { benchGatewayEnv, startGatewayProcess } from "./lib/gateways.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer } from "./lib/issuer.js";
import { watchRss } from "./lib/large/memory.js";
import { startBenchNats } from "./lib/nats-server.js";
import { loadAverage, sampleProc } from "./lib/proc.js";

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), "results");
const { values } = parseArgs({
  options: { mb: { type: "string", default: "100" }, rounds: { type: "string", default: "3" } },
});
const MB = 1_000_000;
const size = Number(values.mb) * MB;
const rounds = Number(values.rounds);

function chunked(parts: Uint8Array[], piece = 1024 * 1024): ReadableStream<Uint8Array> {
  let i = 0;
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      const p = parts[i];
      if (!p) return controller.close();
      controller.enqueue(p.subarray(at, at + piece));
      at += piece;
      if (at >= p.length) [i, at] = [i + 1, 0];
    },
  });
}

const root = await mkdtemp(join(tmpdir(), "vqs-bench-large-batch-"));
await mkdir(RESULTS, { recursive: true });
const issuer = await startBenchIssuer();
const nats = await startBenchNats(join(root, "store"), join(RESULTS, "large-batch-nats.log"));
const gw = await startGatewayProcess({
  env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE),
  logFile: join(RESULTS, "large-batch-gateway.log"),
});
const body = randomBytes(size);
const head = (ct: string) => Buffer.from(`--b\r\nContent-Type: ${ct}\r\n\r\n`);
const batchBody = [
  Buffer.concat([head("text/plain"), Buffer.from("first\r\n"), head("application/octet-stream")]),
  body,
  Buffer.concat([Buffer.from("\r\n"), head("text/plain"), Buffer.from("last\r\n--b--\r\n")]),
];

/** Peak RSS growth of the gateway (bytes) and MB/s of one upload. */
async function measure(kind: "single" | "batch"): Promise<{ growth: number; mbps: number }> {
  await gw.memory(); // a GC first
  const before = sampleProc(gw.pid)?.rssBytes ?? NaN;
  const watch = watchRss(gw.pid);
  const started = performance.now();
  const topic = `bench-large-batch-${kind}-${Date.now()}`;
  const url = `${gw.url}/api/v3/topic/${topic}${kind === "batch" ? "/batch" : ""}`;
  const res = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${issuer.token}`,
      "content-type": kind === "batch" ? "multipart/mixed; boundary=b" : "application/octet-stream",
    },
    body: chunked(kind === "batch" ? batchBody : [body]),
    duplex: "half",
  });
  const text = await res.text();
  const seconds = (performance.now() - started) / 1000;
  const peak = watch.stop();
  if (
    !res.ok ||
    (kind === "batch" &&
      (JSON.parse(text) as { results: { status: string }[] }).results.some(
        (r) => r.status !== "sent",
      ))
  ) {
    throw new Error(`${kind}: ${res.status} ${text}`);
  }
  await fetch(`${gw.url}/api/v3/topic/${topic}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${issuer.token}` },
  });
  return { growth: peak - before, mbps: size / MB / seconds };
}

try {
  const mib = (b: number) => (b / 1_048_576).toFixed(1);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const single: { growth: number; mbps: number }[] = [];
  const batch: { growth: number; mbps: number }[] = [];
  console.log(`load before: ${loadAverage()}`);
  for (let r = 0; r < rounds; r++) {
    // Both orientations: single first on even rounds, batch first on odd ones.
    for (const kind of r % 2 === 0
      ? (["single", "batch"] as const)
      : (["batch", "single"] as const)) {
      const m = await measure(kind);
      (kind === "single" ? single : batch).push(m);
      console.log(
        `round ${r + 1} ${kind}: RSS growth ${mib(m.growth)} MiB, ${m.mbps.toFixed(1)} MB/s`,
      );
    }
  }
  const gs = median(single.map((m) => m.growth));
  const gb = median(batch.map((m) => m.growth));
  const ms = median(single.map((m) => m.mbps));
  const mbt = median(batch.map((m) => m.mbps));
  console.log(
    `median: single ${mib(gs)} MiB ${ms.toFixed(1)} MB/s; batch part ${mib(gb)} MiB ${mbt.toFixed(1)} MB/s; ` +
      `memory ratio ${(gb / gs).toFixed(2)}x (target ≤ 1.5x), speed ratio ${(mbt / ms).toFixed(2)}x; load after: ${loadAverage()}`,
  );
} finally {
  await gw.stop();
  await nats.stop();
  await issuer.close();
  await rm(root, { recursive: true, force: true });
}

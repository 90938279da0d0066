// A large part inside a batch publish against the same bytes as a single publish: the body
// posted chunked (1 MiB writes, no Content-Length) once alone and once as the middle part of a
// three-part batch (small parts around it), in paired rounds with the side going first
// alternating. Each upload's figure is the gateway's peak RSS growth over its RSS after a GC
// (sampled every 20 ms) and its MB/s. Target: the batch part costs no more memory than a single
// upload (ratio ≤ 1.5).
import type { GatewayProcess } from "../gateways.js";
import type { Target } from "../report.js";
import { sampleProc } from "../proc.js";
import { median, round } from "../stats.js";
import { watchRss } from "./memory.js";
import type { GatewayTarget } from "./transfer.js";

const MB = 1_000_000;
const MiB = 1024 * 1024;

export interface BatchResult {
  readonly rounds: { single: Upload; batch: Upload }[];
  readonly singleGrowthMiB: number;
  readonly batchGrowthMiB: number;
  readonly memoryRatio: number;
  readonly speedRatio: number;
}

interface Upload {
  readonly growthMiB: number;
  readonly mbps: number;
}

/** The parts as a stream of `piece`-sized writes. */
function chunked(parts: Uint8Array[], piece = MiB): ReadableStream<Uint8Array> {
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

export async function batchScenario(
  env: { readonly gateway: GatewayProcess; readonly target: GatewayTarget },
  body: Buffer,
  rounds: number,
  log: (line: string) => void,
): Promise<BatchResult> {
  const { gateway: gw, target } = env;
  const head = (ct: string) => Buffer.from(`--b\r\nContent-Type: ${ct}\r\n\r\n`);
  const batchBody = [
    Buffer.concat([head("text/plain"), Buffer.from("first\r\n"), head("application/octet-stream")]),
    body,
    Buffer.concat([Buffer.from("\r\n"), head("text/plain"), Buffer.from("last\r\n--b--\r\n")]),
  ];
  const auth = { authorization: `Bearer ${target.token}` };
  let n = 0;
  const measure = async (kind: "single" | "batch"): Promise<Upload> => {
    await gw.memory(); // a GC first
    const before = sampleProc(gw.pid)?.rssBytes ?? NaN;
    const watch = watchRss(gw.pid);
    const started = performance.now();
    const topic = `large-batch-${kind}-${++n}`;
    const res = await fetch(`${gw.url}/api/v3/topic/${topic}${kind === "batch" ? "/batch" : ""}`, {
      method: "POST",
      headers: {
        ...auth,
        "content-type":
          kind === "batch" ? "multipart/mixed; boundary=b" : "application/octet-stream",
      },
      body: chunked(kind === "batch" ? batchBody : [body]),
      duplex: "half",
    });
    const text = await res.text();
    const seconds = (performance.now() - started) / 1000;
    const peak = watch.stop();
    const refused =
      kind === "batch" &&
      (JSON.parse(text) as { results: { status: string }[] }).results.some(
        (r) => r.status !== "sent",
      );
    if (!res.ok || refused) throw new Error(`large batch, ${kind}: HTTP ${res.status} ${text}`);
    await fetch(`${gw.url}/api/v3/topic/${topic}`, { method: "DELETE", headers: auth });
    return {
      growthMiB: round((peak - before) / MiB, 2),
      mbps: round(body.length / MB / seconds, 1),
    };
  };
  const out: BatchResult["rounds"] = [];
  for (let r = 0; r < rounds; r++) {
    // Both orientations: single first on even rounds, batch first on odd ones.
    const first = r % 2 === 0 ? "single" : "batch";
    const a = await measure(first);
    const b = await measure(first === "single" ? "batch" : "single");
    const pair = first === "single" ? { single: a, batch: b } : { single: b, batch: a };
    log(
      `batch round ${r + 1}: single RSS +${pair.single.growthMiB} MiB ${pair.single.mbps} MB/s, ` +
        `batch part +${pair.batch.growthMiB} MiB ${pair.batch.mbps} MB/s`,
    );
    out.push(pair);
  }
  const single = median(out.map((p) => p.single.growthMiB));
  const batch = median(out.map((p) => p.batch.growthMiB));
  return {
    rounds: out,
    singleGrowthMiB: single,
    batchGrowthMiB: batch,
    memoryRatio: round(batch / single, 2),
    speedRatio: round(median(out.map((p) => p.batch.mbps / p.single.mbps)), 2),
  };
}

export function batchTarget(b: BatchResult): Target {
  return {
    name: "gateway RSS growth of a large batch part vs the same body as a single publish",
    target: "<= 1.5x",
    value: b.memoryRatio,
    pass: b.memoryRatio <= 1.5,
    note: `${b.batchGrowthMiB} vs ${b.singleGrowthMiB} MiB; speed ${b.speedRatio}x`,
  };
}

export function batchLine(b: BatchResult): string {
  return (
    `A large batch part (median of ${b.rounds.length} paired rounds): RSS growth ` +
    `${b.batchGrowthMiB} MiB against ${b.singleGrowthMiB} MiB as a single publish ` +
    `(${b.memoryRatio}x), speed ${b.speedRatio}x`
  );
}

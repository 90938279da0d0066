// `npm run bench:large-ab -- --b-env K=V,.. [--a-env K=V,..] [--pairs n] [--concurrency k]
// [--size-mb n]`: does gateway B download large bodies as fast as gateway A, and with how much
// memory? Both gateways run at once against one nats-server with one stored 100 MB body; the load
// generator downloads it (k at once, multipart receive, SHA-256 checked) from A and B in slices
// A B B A ..., and reports the median of the paired ratios B/A of MB/s, of the gateway's CPU per
// download and of its RSS growth during the slice (RSS from /proc every 20 ms, garbage included).
// Paired slices because the machine's speed drifts within minutes (bench/ab.ts says why).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomBytes, createHash } from "node:crypto";
import {
  benchGatewayEnv,
  benchGatewaySettings,
  startGatewayProcess,
  type GatewayProcess,
} from "./lib/gateways.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer } from "./lib/issuer.js";
import { startBenchNats } from "./lib/nats-server.js";
import { sampleProc } from "./lib/proc.js";
import { round } from "./lib/stats.js";
import { watchRss } from "./lib/large/memory.js";
import { acknowledge, downloadBody, uploadBody, type GatewayTarget } from "./lib/large/transfer.js";

const { values } = parseArgs({
  options: {
    "a-env": { type: "string", default: "" },
    "b-env": { type: "string", default: "" },
    pairs: { type: "string", default: "6" },
    concurrency: { type: "string", default: "1" },
    "size-mb": { type: "string", default: "100" },
  },
});
/** `K=V,K=V`; a variable given as `K=` is unset in that gateway's environment. */
const envOf = (s: string): Record<string, string> =>
  Object.fromEntries(
    s
      .split(",")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
const pairs = Math.max(1, Number(values.pairs));
const k = Math.max(1, Number(values.concurrency));
const size = Math.round(Number(values["size-mb"]) * 1_000_000);
const MiB = 1024 * 1024;
const log = (line: string) => process.stderr.write(`${line}\n`);

const dir = await mkdtemp(join(tmpdir(), "vqs-large-ab-"));
const nats = await startBenchNats(join(dir, "store"), join(dir, "nats.log"));
const issuer = await startBenchIssuer();
const gateways: GatewayProcess[] = [];
try {
  for (const extra of [envOf(values["a-env"]), envOf(values["b-env"])]) {
    const settings = benchGatewaySettings(extra);
    gateways.push(
      await startGatewayProcess({
        env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE, settings.env),
        options: settings.options,
        logFile: join(dir, "gateways.log"),
      }),
    );
  }
  const targets: GatewayTarget[] = gateways.map((g) => ({
    url: g.url,
    token: issuer.token,
    timeoutMs: 300_000,
  }));
  const body = randomBytes(size);
  const sha256 = createHash("sha256").update(body).digest("hex");
  const topic = "ab-download";
  const stored = await uploadBody(targets[0]!, topic, body, {
    contentLength: true,
    retentionSeconds: 3600,
  });
  if (stored.status !== 201) throw new Error(`upload: HTTP ${stored.status} ${stored.body}`);
  let groups = 0;
  /** k downloads at once through gateway `g`: MB/s, CPU s per download, RSS growth (MiB). */
  const slice = async (g: number) => {
    const gw = gateways[g]!;
    const cpu0 = sampleProc(gw.pid)?.cpuSeconds ?? NaN;
    const rss0 = sampleProc(gw.pid)?.rssBytes ?? NaN;
    const watch = watchRss(gw.pid);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: k }, async () => {
        const group = `g${++groups}`;
        const res = await downloadBody(targets[g]!, topic, group);
        if (res.status !== 200 || res.sha256 !== sha256) {
          throw new Error(`download from ${"AB"[g]}: HTTP ${res.status}, ${res.bytes} bytes`);
        }
        if (res.receiptHandle) await acknowledge(targets[g]!, topic, group, res.receiptHandle);
      }),
    );
    const ms = performance.now() - t0;
    const peak = watch.stop();
    const cpu1 = sampleProc(gw.pid)?.cpuSeconds ?? NaN;
    return {
      mbps: (k * size) / 1e6 / (ms / 1000),
      cpu: (cpu1 - cpu0) / k,
      rss: (peak - rss0) / MiB,
    };
  };
  // Warm both paths once.
  await slice(0);
  await slice(1);
  type S = Awaited<ReturnType<typeof slice>>;
  const ratios: { mbps: number; cpu: number; rss: number }[] = [];
  const sides: { a: S[]; b: S[] } = { a: [], b: [] };
  for (let p = 0; p < pairs; p++) {
    const order = p % 2 === 0 ? [0, 1] : [1, 0];
    const got: S[] = [];
    for (const g of order) got[g] = await slice(g);
    const [a, b] = got as [S, S];
    sides.a.push(a);
    sides.b.push(b);
    ratios.push({ mbps: b.mbps / a.mbps, cpu: b.cpu / a.cpu, rss: b.rss / Math.max(a.rss, 0.1) });
    log(
      `pair ${p + 1}: A ${a.mbps.toFixed(1)} MB/s, ${a.cpu.toFixed(2)} s CPU, +${a.rss.toFixed(1)} ` +
        `MiB; B ${b.mbps.toFixed(1)} MB/s, ${b.cpu.toFixed(2)} s CPU, +${b.rss.toFixed(1)} MiB ` +
        `(load ${(await import("node:os")).loadavg()[0]!.toFixed(1)})`,
    );
  }
  const med = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  const result = {
    aEnv: values["a-env"],
    bEnv: values["b-env"],
    pairs,
    concurrency: k,
    sizeBytes: size,
    medianRatioBA: {
      downloadMBps: round(med(ratios.map((r) => r.mbps)), 3),
      gatewayCpuPerDownload: round(med(ratios.map((r) => r.cpu)), 3),
      rssGrowth: round(med(ratios.map((r) => r.rss)), 3),
    },
    medians: {
      a: {
        mbps: round(med(sides.a.map((s) => s.mbps)), 1),
        cpu: round(med(sides.a.map((s) => s.cpu)), 3),
        rssMiB: round(med(sides.a.map((s) => s.rss)), 1),
      },
      b: {
        mbps: round(med(sides.b.map((s) => s.mbps)), 1),
        cpu: round(med(sides.b.map((s) => s.cpu)), 3),
        rssMiB: round(med(sides.b.map((s) => s.rss)), 1),
      },
    },
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  for (const g of gateways) await g.stop().catch(() => undefined);
  await nats.stop().catch(() => undefined);
  await issuer.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

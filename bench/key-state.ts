// What the gateway's own state in NATS costs: per live idempotency key (the message's
// Nats-Msg-Id, its key record in the topic stream and the record's expiry timer) and per delayed
// message (the parked copy and its timer held by the schedule consumer), against the same number
// of plain messages. nats-server RSS is read from /proc (minimum over a few seconds), disk from
// /jsz. Run: `npm run bench:state` (about a minute). Prints a table and writes
// bench/results/state.json.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchGatewayEnv, startGatewayProcess } from "./lib/gateways.js";
import { BENCH_AUDIENCE, BENCH_ISSUER, startBenchIssuer } from "./lib/issuer.js";
import { startBenchNats } from "./lib/nats-server.js";
import { sampleProc } from "./lib/proc.js";

const N = Number(process.argv[2] ?? 50_000);
const BATCH = 100;
const dir = await mkdtemp(join(tmpdir(), "vqs-state-"));
const nats = await startBenchNats(join(dir, "store"), join(dir, "nats.log"));
const issuer = await startBenchIssuer();
const gw = await startGatewayProcess({
  // A short duplicate window, so what stays is what every live key costs after it.
  env: benchGatewayEnv(nats.url, issuer.jwksUrl, BENCH_ISSUER, BENCH_AUDIENCE),
  options: { dedupWindowSeconds: 2 },

  logFile: join(dir, "gateway.log"),
});

async function rss(): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < 6; i++) {
    min = Math.min(min, sampleProc(nats.pid)?.rssBytes ?? Infinity);
    await new Promise((r) => setTimeout(r, 500));
  }
  return min;
}
async function storeBytes(): Promise<number> {
  const jsz = (await nats.jsz()) as { storage?: number } | null;
  return jsz?.storage ?? 0;
}
async function publish(topic: string, headers: (i: number) => Record<string, string>) {
  for (let b = 0; b < N / BATCH; b += 4) {
    await Promise.all(
      [0, 1, 2, 3].map(async (k) => {
        const first = (b + k) * BATCH;
        if (first >= N) return;
        const body =
          Array.from({ length: BATCH }, (_, j) => {
            const h = Object.entries(headers(first + j))
              .map(([n, v]) => `${n}: ${v}\r\n`)
              .join("");
            return `--b\r\n${h}\r\n${"x".repeat(100)}\r\n`;
          }).join("") + "--b--\r\n";
        const res = await fetch(`${gw.url}/api/v3/topic/${topic}/batch`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${issuer.token}`,
            "content-type": "multipart/mixed; boundary=b",
          },
          body,
        });
        if (res.status !== 200) throw new Error(`batch publish: ${res.status}`);
      }),
    );
  }
}

const rows: Array<{ what: string; rssPerItem: number; diskPerItem: number }> = [];
async function measure(
  what: string,
  topic: string,
  headers: (i: number) => Record<string, string>,
) {
  const [r0, d0] = [await rss(), await storeBytes()];
  await publish(topic, headers);
  await new Promise((r) => setTimeout(r, 5000)); // the 2 s duplicate window has passed
  const [r1, d1] = [await rss(), await storeBytes()];
  rows.push({ what, rssPerItem: (r1 - r0) / N, diskPerItem: (d1 - d0) / N });
}

try {
  await publish("warmup", () => ({}));
  await measure("plain message (100 B body)", "plain", () => ({}));
  await measure("message with a live idempotency key", "keyed", (i) => ({
    "Vqs-Idempotency-Key": `key-${i}`,
  }));
  await measure("delayed message (timer pending)", "delayed", () => ({
    "Vqs-Delay-Seconds": "3600",
  }));
  const plain = rows[0]!;
  console.log(`nats-server ${nats.version}, ${N} items per row`);
  console.log("what | RSS per item | disk per item | beyond a plain message (RSS / disk)");
  for (const r of rows) {
    console.log(
      `${r.what} | ${r.rssPerItem.toFixed(0)} B | ${r.diskPerItem.toFixed(0)} B | ` +
        `${(r.rssPerItem - plain.rssPerItem).toFixed(0)} B / ${(r.diskPerItem - plain.diskPerItem).toFixed(0)} B`,
    );
  }
  await writeFile(
    new URL("./results/state.json", import.meta.url),
    JSON.stringify({ natsVersion: nats.version, items: N, rows }, null, 2) + "\n",
  );
} finally {
  await gw.stop();
  await issuer.close();
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
}

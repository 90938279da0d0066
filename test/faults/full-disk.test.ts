// A JetStream store on a disk that fills up: the server's store directory is a 24 MiB tmpfs while
// its own limit (max_file_store) is far larger, as on a volume sized like the limit. Publishes
// must answer 503, never 201, each within the request timeout, and be counted by cause; once the
// disk is grown (and, where the server keeps its write error, nats-server restarted, as the
// runbook in docs/operations.md says), publishes succeed again and every 201 is delivered.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerProcess } from "../../src/dev/nats-server-process.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { api, parts, sleep, uniqueName } from "../helpers/http.js";
import { startIssuer, type TestIssuer } from "../helpers/issuer.js";
import { scrape } from "../helpers/metrics.js";
import { eventually } from "../helpers/wait.js";

const ROOT = process.getuid?.() === 0;
const REQUEST_TIMEOUT_MS = 1000;
const BODY = Buffer.alloc(64 * 1024, 97);

let disk: string;
let nats: NatsServerProcess;
let issuer: TestIssuer;
let gw: TestGateway;

if (!ROOT) {
  console.warn("full-disk test skipped: mounting a size-limited tmpfs needs root");
}

beforeAll(async () => {
  if (!ROOT) return;
  disk = await mkdtemp(join(tmpdir(), "vqs-full-disk-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=24m", "tmpfs", disk]);
  nats = await startNatsServer({ storeDir: join(disk, "store"), maxFileStore: 1024 ** 3 });
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer, {
    config: { requestTimeoutMs: REQUEST_TIMEOUT_MS },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.stop();
  if (disk) {
    execFileSync("umount", ["-l", disk]);
    await rm(disk, { recursive: true, force: true });
  }
});

async function metric(name: string, metricsUrl: string): Promise<number> {
  const text = await scrape(metricsUrl);
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

describe.skipIf(!ROOT)("a JetStream store whose disk fills up", () => {
  it("answers 503 within the request timeout, never 201, and delivers every 201 once it has room again", async () => {
    const token = await issuer.token();
    const q = api(gw.url, token);
    const topic = uniqueName("full");
    const acked: string[] = [];
    const refused: { status: number; ms: number }[] = [];
    for (let i = 0; refused.length < 6 && i < 2000; i++) {
      const started = Date.now();
      const res = await q.publish(topic, Buffer.concat([Buffer.from(`m${i} `), BODY]), {
        ...(i % 2 ? { "vqs-idempotency-key": `k${i}` } : {}),
      });
      await res.text();
      if (res.status === 201) acked.push(`m${i}`);
      else refused.push({ status: res.status, ms: Date.now() - started });
    }
    expect(acked.length).toBeGreaterThan(100);
    expect(refused.map((r) => r.status)).toEqual(refused.map(() => 503));
    // The server never answers a publish it cannot write: the gateway's deadline answers.
    expect(Math.max(...refused.map((r) => r.ms))).toBeLessThan(REQUEST_TIMEOUT_MS + 1500);
    expect(
      await metric('vqs_store_write_failures_total{cause="timeout"}', gw.metricsUrl),
    ).toBeGreaterThan(0);

    // The operator grows the disk; where the server keeps its stream's write error, a restart of
    // that node clears it (docs/operations.md, "When the store fills up").
    execFileSync("mount", ["-o", "remount,size=96m", disk]);
    const after = async () => (await q.publish(topic, "after")).status;
    let status = await after();
    const recoveredWithoutRestart = status === 201;
    if (!recoveredWithoutRestart) {
      await nats.stop();
      nats = await startNatsServer(nats.options);
      await eventually(async () => (status = await after()) === 201, 10_000, 250);
    }
    console.log("full disk", {
      acked: acked.length,
      refused: refused.length,
      slowestRefusalMs: Math.max(...refused.map((r) => r.ms)),
      recoveredWithoutRestart,
    });
    expect(status).toBe(201);

    const seen = new Set<string>();
    for (let empty = 0; empty < 3;) {
      const res = await q.receive(topic, "drain", { "vqs-max-messages": "10" });
      if (res.status !== 200) {
        await res.text();
        empty++;
        await sleep(100);
        continue;
      }
      for (const p of await parts(res)) seen.add(p.body.subarray(0, 8).toString().split(" ")[0]!);
    }
    expect(acked.filter((m) => !seen.has(m))).toEqual([]);
  }, 120_000);
});

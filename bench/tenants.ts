// `npm run bench:tenants [-- --quick]`: one region, two tenants. Namespace B is quiet (publishes,
// receives, 1 s delays and pushes at a steady rate); namespace A runs one noisy scenario at a time
// (a publish flood, filling its storage quota, a flood of timers due at once, pushed groups whose
// endpoint never answers, thousands of long-poll waiters). For each scenario B's p99s are compared
// with B alone in the same run, and A's answers are tallied (only 2xx and 429/4xx with
// Retry-After are allowed). One nats-server and one gateway process on 127.0.0.1.
// Never part of `npm test`; every loop is bounded in count and time.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Agent, request } from "undici";
import { startGatewayProcess, type GatewayProcess } from "./lib/gateways.js";
import { startBenchNats } from "./lib/nats-server.js";
import { loadAverage } from "./lib/proc.js";
import { percentiles, round, sleep } from "./lib/stats.js";
import { AUDIENCE, ISSUER, startIssuer } from "../test/helpers/issuer.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    seconds: { type: "string" },
    timers: { type: "string" },
    out: { type: "string", default: join(BENCH_DIR, "results", "tenants.json") },
  },
});
const QUICK = args.quick;
const SECONDS = Number(args.seconds ?? (QUICK ? 8 : 20));
const TIMERS = Number(args.timers ?? (QUICK ? 5_000 : 100_000));
const B_RATE = 100;
const QUOTA = 8 * 1024 * 1024;

const agent = new Agent({ connections: 4096, keepAliveTimeout: 30_000 });

interface Answer {
  status: number;
  retryAfter: string | null;
  body: string;
  ms: number;
}

async function call(
  base: string,
  token: string,
  method: "POST" | "PUT",
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const started = performance.now();
  const res = await request(`${base}${path}`, {
    method,
    dispatcher: agent,
    headers: { authorization: `Bearer ${token}`, ...headers },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    retryAfter: (res.headers["retry-after"] as string | undefined) ?? null,
    body: text,
    ms: performance.now() - started,
  };
}

/** B's steady workload and what it measured. */
interface Quiet {
  publishMs: number[];
  receiveMs: number[];
  lateMs: number[];
  pushMs: number[];
  errors: string[];
}

async function runQuiet(
  base: string,
  token: string,
  pushTopic: string,
  seconds: number,
  pushedAt: Map<string, number>,
  pushLatency: number[],
): Promise<Quiet> {
  const q: Quiet = { publishMs: [], receiveMs: [], lateMs: [], pushMs: pushLatency, errors: [] };
  const topic = `b-${Date.now()}`;
  const sentAt = new Map<string, number>();
  const dueAt = new Map<string, number>();
  const until = Date.now() + seconds * 1000;
  let receiving = true;
  const receiver = (async () => {
    while (receiving || sentAt.size + dueAt.size > 0) {
      if (Date.now() > until + 5000) break;
      const r = await call(base, token, "POST", `/api/v3/topic/${topic}/consumer/g`, {
        accept: "application/x-ndjson",
        "vqs-max-messages": "10",
        "vqs-wait-seconds": "2",
      }).catch((e: unknown) => ({ status: 0, body: String(e), retryAfter: null, ms: 0 }));
      if (r.status === 204) continue;
      if (r.status !== 200) {
        q.errors.push(`receive ${r.status} ${r.body.slice(0, 100)}`);
        continue;
      }
      const now = Date.now();
      for (const line of r.body.split("\n").filter(Boolean)) {
        const m = JSON.parse(line) as { payload?: string; body?: string; data?: string };
        const text = Buffer.from(m.payload ?? m.body ?? m.data ?? "", "base64").toString();
        const [kind, id] = text.split(":");
        if (kind === "now" && sentAt.has(id!)) {
          q.receiveMs.push(now - sentAt.get(id!)!);
          sentAt.delete(id!);
        } else if (kind === "later" && dueAt.has(id!)) {
          q.lateMs.push(now - dueAt.get(id!)!);
          dueAt.delete(id!);
        }
      }
    }
  })();
  let n = 0;
  const sends: Promise<void>[] = [];
  while (Date.now() < until) {
    const id = String(n++);
    const delayed = n % 10 === 0;
    const pushed = n % 10 === 5;
    const t = Date.now();
    const body = delayed ? `later:${id}` : `now:${id}`;
    // Before the publish: a push can arrive before the publish's answer does.
    if (pushed) pushedAt.set(`push:${id}`, t);
    sends.push(
      call(
        base,
        token,
        "POST",
        `/api/v3/topic/${pushed ? pushTopic : topic}`,
        delayed
          ? { "vqs-delay-seconds": "1", "content-type": "text/plain" }
          : { "content-type": "text/plain" },
        pushed ? `push:${id}` : body,
      ).then((r) => {
        if (r.status !== 201) q.errors.push(`publish ${r.status} ${r.body.slice(0, 100)}`);
        q.publishMs.push(r.ms);
        if (pushed) return;
        if (delayed) dueAt.set(id, t + 1000);
        else sentAt.set(id, t);
      }),
    );
    await sleep(1000 / B_RATE);
  }
  await Promise.all(sends);
  receiving = false;
  await receiver;
  for (const id of sentAt.keys()) q.errors.push(`message ${id} never received`);
  for (const id of dueAt.keys()) q.errors.push(`delayed message ${id} never received`);
  return q;
}

/** A's answers in a scenario: counts by status, and refusals without Retry-After. */
class Tally {
  readonly byStatus = new Map<number, number>();
  bad = 0;
  note(r: Answer): void {
    this.byStatus.set(r.status, (this.byStatus.get(r.status) ?? 0) + 1);
    const ok = r.status >= 200 && r.status < 300;
    const refused = r.status >= 400 && r.status < 500 && r.retryAfter !== null;
    if (!ok && !refused && r.status !== 403) this.bad++;
  }
  toJSON() {
    return { byStatus: Object.fromEntries(this.byStatus), notAllowed: this.bad };
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "vqs-bench-tenants-"));
  await mkdir(join(BENCH_DIR, "results"), { recursive: true });
  const nats = await startBenchNats(
    join(dir, "store"),
    join(BENCH_DIR, "results", "tenants-nats.log"),
  );
  const issuer = await startIssuer();
  const gw: GatewayProcess = await startGatewayProcess({
    logFile: join(BENCH_DIR, "results", "tenants-gateway.log"),
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      NATS_URL: nats.url,
      VQS_REGION: "bench1",
      VQS_OIDC_JWKS_URL: issuer.jwksUrl,
      VQS_OIDC_ISSUER: ISSUER,
      VQS_OIDC_AUDIENCE: AUDIENCE,
      VQS_RECEIPT_SECRET: "bench-receipt-secret-0123456789abcdef",
      LOG_LEVEL: "error",
      VQS_RATE_LIMIT_PER_SECOND: "500",
      VQS_NAMESPACE_MAX_BYTES: String(QUOTA),
      VQS_MAX_WAITERS_PER_NAMESPACE: "1000",
      VQS_MAX_PUSHES_IN_FLIGHT_PER_NAMESPACE: "64",
      VQS_MAX_TOPICS_PER_NAMESPACE: "0",
      VQS_MAX_GROUPS_PER_NAMESPACE: "0",
      VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1",
    },
  });
  const base = gw.url;
  const tokenA = await issuer.token({ project_id: "prj_noisy" });
  const tokenB = await issuer.token({ project_id: "prj_quiet" });

  // B's push endpoint (answers at once) and A's (never answers).
  const pushedAt = new Map<string, number>();
  const pushLatency: number[] = [];
  const held: ServerResponse[] = [];
  const endpoint: Server = createServer((req, res) => {
    if (req.url?.startsWith("/a")) {
      held.push(res);
      return;
    }
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const m = /push:\d+/.exec(body);
      const t = m ? pushedAt.get(m[0]) : undefined;
      if (t !== undefined) {
        pushLatency.push(Date.now() - t);
        pushedAt.delete(m![0]);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => endpoint.listen(0, "127.0.0.1", r));
  const pushBase = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  const pushTopic = "b-pushed";
  await call(base, tokenB, "POST", `/api/v3/topic/${pushTopic}`, {}, "make");
  await call(
    base,
    tokenB,
    "PUT",
    `/api/v3/topic/${pushTopic}/consumer/p/settings`,
    { "content-type": "application/json" },
    JSON.stringify({ push: { url: `${pushBase}/b` } }),
  );

  const results: Record<string, unknown> = {};
  const measureB = async (name: string, noisy: (stop: () => boolean) => Promise<Tally | null>) => {
    let stopped = false;
    pushLatency.length = 0;
    const aWork = noisy(() => stopped);
    const q = await runQuiet(base, tokenB, pushTopic, SECONDS, pushedAt, pushLatency);
    stopped = true;
    const tally = await aWork;
    const row = {
      publishP99: percentiles(q.publishMs).p99,
      receiveP99: percentiles(q.receiveMs).p99,
      timerLateP99: percentiles(q.lateMs).p99,
      pushP99: percentiles([...pushLatency]).p99,
      bErrors: q.errors.length,
      bErrorSamples: q.errors.slice(0, 5),
      a: tally?.toJSON() ?? null,
      load: loadAverage(),
    };
    results[name] = row;
    console.log(name, JSON.stringify(row));
  };

  await measureB("b_alone", () => Promise.resolve(null));

  // 1. A publishes as fast as 64 connections allow (many times what its rate limit admits).
  await measureB("a_publish_flood", async (stop) => {
    const t = new Tally();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (!stop()) t.note(await call(base, tokenA, "POST", "/api/v3/topic/a-flood", {}, "x"));
      }),
    );
    return t;
  });

  // 2. A fills its storage quota and keeps publishing.
  await measureB("a_storage_full", async (stop) => {
    const t = new Tally();
    const body = "y".repeat(64 * 1024);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (!stop()) {
          const r = await call(base, tokenA, "POST", "/api/v3/topic/a-fill", {}, body);
          t.note(r);
          if (r.status === 429) await sleep(50);
        }
      }),
    );
    return t;
  });

  // 3. A's timers, all due within about a second of each other.
  await measureB("a_timer_flood", async (stop) => {
    const t = new Tally();
    const bodies =
      Array.from({ length: 100 }, (_, i) => `--b\r\n\r\nt${i}\r\n`).join("") + "--b--\r\n";
    let sent = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (!stop() && sent < TIMERS) {
          sent += 100;
          t.note(
            await call(
              base,
              tokenA,
              "POST",
              `/api/v3/topic/a-timers-${sent % 50}/batch`,
              { "content-type": "multipart/mixed; boundary=b", "vqs-delay-seconds": "3" },
              bodies,
            ),
          );
        }
      }),
    );
    return t;
  });

  // 4. 200 pushed groups of A whose endpoint never answers.
  await measureB("a_push_hang", async (stop) => {
    const t = new Tally();
    for (let i = 0; i < 200; i++) {
      const topic = `a-push-${i % 20}`;
      t.note(await call(base, tokenA, "POST", `/api/v3/topic/${topic}`, {}, "make"));
      t.note(
        await call(
          base,
          tokenA,
          "PUT",
          `/api/v3/topic/${topic}/consumer/g${i}/settings`,
          { "content-type": "application/json" },
          JSON.stringify({ push: { url: `${pushBase}/a/${i}`, timeoutSeconds: 30 } }),
        ),
      );
    }
    while (!stop()) {
      for (let i = 0; i < 20 && !stop(); i++) {
        t.note(await call(base, tokenA, "POST", `/api/v3/topic/a-push-${i}`, {}, "p"));
      }
      await sleep(100);
    }
    return t;
  });

  // 5. 2,000 long-poll waiters of A.
  await measureB("a_waiters", async (stop) => {
    const t = new Tally();
    await call(base, tokenA, "POST", "/api/v3/topic/a-wait", {}, "make");
    await Promise.all(
      Array.from({ length: 2000 }, async (_, i) => {
        while (!stop()) {
          const r = await call(base, tokenA, "POST", `/api/v3/topic/a-wait/consumer/g${i % 20}`, {
            accept: "application/x-ndjson",
            "vqs-wait-seconds": "5",
          });
          t.note(r);
          if (r.status === 429) await sleep(1000);
        }
      }),
    );
    return t;
  });

  for (const r of held) r.destroy();
  endpoint.close();
  const baseline = results.b_alone as Record<string, number>;
  const ratios: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(results)) {
    if (name === "b_alone") continue;
    const row = r as Record<string, number>;
    const within = (k: string) => row[k]! <= Math.max(1.5 * baseline[k]!, baseline[k]! + 50);
    ratios[name] = {
      publish: round(row.publishP99! / baseline.publishP99!),
      receive: round(row.receiveP99! / baseline.receiveP99!),
      timer: round(row.timerLateP99! / Math.max(1, baseline.timerLateP99!)),
      push: round(row.pushP99! / Math.max(1, baseline.pushP99!)),
      targetsMet: ["publishP99", "receiveP99", "timerLateP99", "pushP99"].every(within),
    };
  }
  const out = { quick: QUICK, seconds: SECONDS, timers: TIMERS, results, ratios };
  await writeFile(args.out, JSON.stringify(out, null, 2));
  console.log(JSON.stringify(ratios, null, 2));
  await gw.stop();
  await issuer.close();
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
  await agent.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

// `npm run bench:tenants [-- --quick]`: one region, two tenants. Namespace B is quiet (publishes,
// receives, 1 s delays and pushes at a steady rate); namespace A runs one noisy scenario at a time
// (a publish flood, filling its storage quota, a flood of timers due at once, pushed groups whose
// endpoint never answers, thousands of long-poll waiters). For each scenario B's p99s are compared
// with B alone in the same run, and A's answers are tallied (only 2xx and 429/4xx with
// Retry-After are allowed). One nats-server and one gateway process on 127.0.0.1 (`--gateways 2`:
// two, each tenant's requests alternating between them, so the rate limits are regional
// budgets shared by the gateways' demand exchange); each tenant's
// load (and its push endpoint) runs in a process of its own (this file, started with `--role
// quiet|noisy`), so A's load generator never shares B's event loop and B's figures are the
// gateway's. Never part of `npm test`; every loop is bounded in count and time.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Agent, request } from "undici";
import { benchServers, type BenchServers, type GatewayStart } from "./lib/standalone.js";
import { loadAverage } from "./lib/proc.js";
import { percentiles, round, sleep } from "./lib/stats.js";
import { timerShard } from "../src/nats/core/naming.js";
import { makeNamespace } from "../src/queue/namespace.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    seconds: { type: "string" },
    timers: { type: "string" },
    out: { type: "string", default: join(BENCH_DIR, "results", "tenants.json") },
    role: { type: "string" },
    only: { type: "string" },
    scenario: { type: "string" },
    gateways: { type: "string", default: "1" },
    /** The gateways run on the service's default limits (no rate limit, default caps). */
    defaults: { type: "boolean", default: false },
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

/** Per tenant process: the next gateway a request goes to (round robin over `base`'s list). */
let turn = 0;

/** One request to `base`, a gateway's URL or a comma-separated list of them (taken in turn). */
async function call(
  base: string,
  token: string,
  method: "POST" | "PUT" | "DELETE",
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const bases = base.split(",");
  const gateway = bases.length === 1 ? base : bases[turn++ % bases.length]!;
  const started = performance.now();
  const res = await request(`${gateway}${path}`, {
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

/**
 * B's workload for `seconds`: 100 publishes a second, of which 1 in 10 delayed 1 s and 1 in 10
 * to a pushed topic whose endpoint (in this process) answers at once; the rest received by a
 * long-polling receiver. Latencies are measured on this process's clock.
 */
async function runQuiet(base: string, token: string, scenario: string, seconds: number) {
  const q: Quiet = { publishMs: [], receiveMs: [], lateMs: [], pushMs: [], errors: [] };
  const pushedAt = new Map<string, number>();
  const endpoint: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const m = /push:\d+/.exec(body);
      const t = m ? pushedAt.get(m[0]) : undefined;
      if (t !== undefined) {
        q.pushMs.push(Date.now() - t);
        pushedAt.delete(m![0]);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => endpoint.listen(0, "127.0.0.1", r));
  const pushBase = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  // A topic and pushed group of its own per scenario: nothing left over from the last one.
  const pushTopic = `b-pushed-${scenario}`;
  await call(base, token, "POST", `/api/v3/topic/${pushTopic}`, {}, "make");
  const put = await call(
    base,
    token,
    "PUT",
    `/api/v3/topic/${pushTopic}/consumer/p/settings`,
    { "content-type": "application/json" },
    JSON.stringify({ push: { url: `${pushBase}/b`, autoAck: true } }),
  );
  if (put.status >= 300) q.errors.push(`push settings ${put.status} ${put.body.slice(0, 100)}`);
  await sleep(1000); // the settings reach the pusher

  const topic = `b-${scenario}`;
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
    const body = pushed ? `push:${id}` : delayed ? `later:${id}` : `now:${id}`;
    // Before the publish: a push can arrive before the publish's answer does.
    if (pushed) pushedAt.set(body, t);
    else if (delayed) dueAt.set(id, t + 1000);
    else sentAt.set(id, t);
    sends.push(
      call(
        base,
        token,
        "POST",
        `/api/v3/topic/${pushed ? pushTopic : topic}`,
        delayed
          ? { "vqs-delay-seconds": "1", "content-type": "text/plain" }
          : { "content-type": "text/plain" },
        body,
      ).then(
        (r) => {
          q.publishMs.push(r.ms);
          if (r.status === 201) return;
          q.errors.push(`publish ${r.status} ${r.body.slice(0, 100)}`);
          pushedAt.delete(body);
          dueAt.delete(id);
          sentAt.delete(id);
        },
        (err: unknown) => {
          q.errors.push(`publish failed: ${String(err)}`);
          pushedAt.delete(body);
          dueAt.delete(id);
          sentAt.delete(id);
        },
      ),
    );
    await sleep(1000 / B_RATE);
  }
  await Promise.all(sends);
  receiving = false;
  await receiver;
  // Pushes still on their way get the same grace as the receiver's last messages.
  for (let i = 0; i < 50 && pushedAt.size > 0; i++) await sleep(100);
  for (const id of sentAt.keys()) q.errors.push(`message ${id} never received`);
  for (const id of dueAt.keys()) q.errors.push(`delayed message ${id} never received`);
  for (const id of pushedAt.keys()) q.errors.push(`${id} never pushed`);
  endpoint.close();
  const p = (xs: number[]) => {
    const r = percentiles(xs);
    return { p50: round(r.p50), p99: round(r.p99), n: xs.length };
  };
  return {
    publish: p(q.publishMs),
    receive: p(q.receiveMs),
    timerLate: p(q.lateMs),
    push: p(q.pushMs),
    errors: q.errors.length,
    errorSamples: q.errors.slice(0, 5),
  };
}

type QuietResult = Awaited<ReturnType<typeof runQuiet>>;
/** A's answers in a scenario: counts by status, and refusals without Retry-After. */
class Tally {
  readonly byStatus = new Map<number, number>();
  /** Parts of batch answers: stored, and refused by code. */
  readonly parts = new Map<string, number>();
  bad = 0;
  /** Counts a batch answer's parts ({results: [{messageId} | {error: {code}}]}). */
  noteParts(r: Answer): void {
    try {
      const { results } = JSON.parse(r.body) as {
        results?: { messageId?: string; statusCode?: number }[];
      };
      for (const p of results ?? []) {
        const k = p.messageId ? "stored" : String(p.statusCode ?? "other");
        this.parts.set(k, (this.parts.get(k) ?? 0) + 1);
      }
    } catch {
      // not a batch answer
    }
  }
  note(r: Answer): void {
    this.byStatus.set(r.status, (this.byStatus.get(r.status) ?? 0) + 1);
    const ok = r.status >= 200 && r.status < 300;
    const refused = r.status >= 400 && r.status < 500 && r.retryAfter !== null;
    if (!ok && !refused && r.status !== 403) this.bad++;
  }
  toJSON() {
    return {
      byStatus: Object.fromEntries(this.byStatus),
      ...(this.parts.size > 0 ? { parts: Object.fromEntries(this.parts) } : {}),
      notAllowed: this.bad,
    };
  }
}

/** A's publish flood: plain publishes on 64 connections, as fast as they are answered. */
async function flood(base: string, token: string, stop: () => boolean, t: Tally): Promise<void> {
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (!stop()) t.note(await call(base, token, "POST", "/api/v3/topic/a-flood", {}, "x"));
    }),
  );
}

/** A's noisy scenarios; each runs until `stop()` and says when its set-up is done. */
const NOISY: Record<
  string,
  (base: string, token: string, stop: () => boolean, ready: () => void) => Promise<Tally>
> = {
  // A publishes as fast as 64 connections allow (many times what its rate limit admits).
  async a_publish_flood(base, token, stop, ready) {
    const t = new Tally();
    ready();
    await flood(base, token, stop, t);
    return t;
  },

  // The noisy neighbour with the service's defaults (`--defaults`: no rate limit): A schedules
  // `--timers` delayed messages all due at one moment (refused parts, past its delayed-publish
  // cap, are offered again after their Retry-After), then floods plain publishes on 64
  // connections while they come due: B's publishes and timers share the gateway with both.
  async a_timers_then_flood(base, token, stop, ready) {
    const t = new Tally();
    const dueAt = Date.now() + 15_000 + (TIMERS / 1000) * 1000;
    const batch = (seconds: number) =>
      Array.from(
        { length: 100 },
        (_, i) =>
          `--b\r\ncontent-type: text/plain\r\nvqs-delay-seconds: ${seconds}\r\n\r\nt${i}\r\n`,
      ).join("") + "--b--\r\n";
    let stored = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (!stop() && stored < TIMERS && Date.now() < dueAt - 5000) {
          const seconds = Math.max(1, Math.round((dueAt - Date.now()) / 1000));
          const r = await call(
            base,
            token,
            "POST",
            `/api/v3/topic/a-due-${stored % 50}/batch`,
            { "content-type": "multipart/mixed; boundary=b" },
            batch(seconds),
          );
          t.note(r);
          t.noteParts(r);
          const before = t.parts.get("stored") ?? 0;
          stored = before;
          if (r.status !== 200 || r.body.includes('"statusCode":429')) await sleep(1000);
        }
      }),
    );
    ready();
    await flood(base, token, stop, t);
    return t;
  },

  // A fills its storage quota and keeps publishing.
  async a_storage_full(base, token, stop, ready) {
    const t = new Tally();
    const body = "y".repeat(64 * 1024);
    ready();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (!stop()) {
          const r = await call(base, token, "POST", "/api/v3/topic/a-fill", {}, body);
          t.note(r);
          if (r.status === 429) await sleep(50);
        }
      }),
    );
    return t;
  },

  // 2,000 long-poll waiters of A.
  async a_waiters(base, token, stop, ready) {
    const t = new Tally();
    await call(base, token, "POST", "/api/v3/topic/a-wait", {}, "make");
    ready();
    await Promise.all(
      Array.from({ length: 2000 }, async (_, i) => {
        while (!stop()) {
          const r = await call(base, token, "POST", `/api/v3/topic/a-wait/consumer/g${i % 20}`, {
            accept: "application/x-ndjson",
            "vqs-wait-seconds": "5",
          });
          t.note(r);
          if (r.status === 429) await sleep(1000);
        }
      }),
    );
    return t;
  },

  // 200 pushed groups of A whose endpoint (in this process) never answers.
  async a_push_hang(base, token, stop, ready) {
    const t = new Tally();
    const held: ServerResponse[] = [];
    const endpoint = createServer((_req, res) => void held.push(res));
    await new Promise<void>((r) => endpoint.listen(0, "127.0.0.1", r));
    const pushBase = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    const groups: string[] = [];
    for (let i = 0; i < 200; i++) {
      const topic = `a-push-${i % 20}`;
      t.note(await call(base, token, "POST", `/api/v3/topic/${topic}`, {}, "make"));
      const path = `/api/v3/topic/${topic}/consumer/g${i}/settings`;
      groups.push(path);
      t.note(
        await call(
          base,
          token,
          "PUT",
          path,
          { "content-type": "application/json" },
          JSON.stringify({ push: { url: `${pushBase}/a/${i}`, timeoutSeconds: 30 } }),
        ),
      );
    }
    ready();
    while (!stop()) {
      for (let i = 0; i < 20 && !stop(); i++) {
        t.note(await call(base, token, "POST", `/api/v3/topic/a-push-${i}`, {}, "p"));
      }
      await sleep(100);
    }
    // The groups go with the scenario, so later scenarios do not push to a closed endpoint.
    for (const path of groups) await call(base, token, "DELETE", path);
    for (const r of held) r.destroy();
    endpoint.close();
    return t;
  },

  // A's timers, all due within about a second of each other (last: they take a while to move).
  async a_timer_flood(base, token, stop, ready) {
    const t = new Tally();
    const bodies =
      // Each part with a header: mixpart drops every other part of a body whose parts have none.
      Array.from(
        { length: 100 },
        (_, i) => `--b\r\ncontent-type: text/plain\r\nvqs-delay-seconds: 3\r\n\r\nt${i}\r\n`,
      ).join("") + "--b--\r\n";
    let sent = 0;
    ready();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (!stop() && sent < TIMERS) {
          const r = await call(
            base,
            token,
            "POST",
            `/api/v3/topic/a-timers-${sent % 50}/batch`,
            { "content-type": "multipart/mixed; boundary=b" }, // each part says its delay
            bodies,
          );
          t.note(r);
          t.noteParts(r);
          // Offered: the parts the gateway answered for (a batch refused whole offered none).
          if (r.status === 200) sent += 100;
        }
      }),
    );
    return t;
  },
};

/** Messages between the bench and its tenant processes (IPC). */
type WorkerMessage =
  | { type: "ready" }
  | { type: "quiet"; result: QuietResult }
  | { type: "noisy"; tally: ReturnType<Tally["toJSON"]> };

/** Runs as a tenant process: `--role quiet|noisy --scenario <name>`, told where by env. */
async function worker(role: string, scenario: string): Promise<void> {
  const base = process.env.VQS_BENCH_GATEWAY_URL!;
  const token = process.env.VQS_BENCH_TOKEN!;
  const send = (m: WorkerMessage) => process.send!(m);
  if (role === "quiet") {
    send({ type: "quiet", result: await runQuiet(base, token, scenario, SECONDS) });
  } else {
    const run = NOISY[scenario];
    if (!run) throw new Error(`no scenario ${scenario}`);
    let stopped = false;
    process.on("message", (m: { type?: string }) => {
      if (m.type === "stop") stopped = true;
    });
    const tally = await run(
      base,
      token,
      () => stopped,
      () => send({ type: "ready" }),
    );
    send({ type: "noisy", tally: tally.toJSON() });
  }
  await agent.close();
  process.disconnect();
}

/** Starts this file as a tenant process; resolves its messages as they come. */
function startWorker(role: "quiet" | "noisy", scenario: string, env: Record<string, string>) {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      fileURLToPath(import.meta.url),
      "--role",
      role,
      "--scenario",
      scenario,
      "--seconds",
      String(SECONDS),
      "--timers",
      String(TIMERS),
    ],
    { env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  const next = <T extends WorkerMessage["type"]>(type: T) =>
    new Promise<Extract<WorkerMessage, { type: T }>>((resolve, reject) => {
      const onMessage = (m: WorkerMessage) => {
        if (m.type !== type) return;
        child.off("message", onMessage);
        resolve(m as Extract<WorkerMessage, { type: T }>);
      };
      child.on("message", onMessage);
      child.once("exit", (code) => reject(new Error(`${role} ${scenario} exited (${code})`)));
    });
  return { child, next };
}

async function main(): Promise<void> {
  const servers = await benchServers("vqs-bench-tenants-");
  try {
    await measureAll(servers);
  } finally {
    await servers.cleanup();
    await agent.close();
  }
}

async function measureAll(servers: BenchServers): Promise<void> {
  await mkdir(join(BENCH_DIR, "results"), { recursive: true });
  const issuer = servers.issuer;
  const gatewayCount = Number(args.gateways);
  const TUNED_LIMITS = {
    // Per tenant: above B's needs (about 100 publishes and 50 receives a second), well below
    // what the gateway can serve, so that A's flood is mostly refused.
    VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "250",
    // The small quota is the storage scenario's (its own team); the others have room (the
    // timer flood's 100,000 parked messages and timers take some 40 MB).
    VQS_NAMESPACE_MAX_BYTES: String(1024 * 1024 * 1024),
    VQS_TENANT_MAX_BYTES: String(1024 * 1024 * 1024),
    VQS_TENANT_OVERRIDES: `team_full:bytes=${QUOTA}`,
    VQS_MAX_WAITERS_PER_NAMESPACE: "1000",
    // Pushes under way per namespace on a gateway, tuned like the limits above.
    maxPushesInFlightPerNamespace: "64",
  };
  const gatewayStart = (i: number): GatewayStart => ({
    logFile: join(BENCH_DIR, "results", `tenants-gateway${i === 0 ? "" : `-${i}`}.log`),
    env: {
      LOG_LEVEL: "error",
      VQS_PUSH_ALLOWED_URLS: "http://127.0.0.1:*",
      ...(args.defaults ? {} : TUNED_LIMITS),
    },
    // --defaults: the service's default limits; else the bench's uncapped ones, tuned above.
    defaultLimits: args.defaults,
  });
  const { gateway } = await servers.start({
    natsStore: join(servers.root, "store"),
    natsLog: join(BENCH_DIR, "results", "tenants-nats.log"),
    ...gatewayStart(0),
  });
  const gws = [gateway];
  for (let i = 1; i < gatewayCount; i++) gws.push(await servers.startGateway(gatewayStart(i)));
  const urls = gws.map((g) => g.url).join(",");
  const env = (token: string) => ({ VQS_BENCH_GATEWAY_URL: urls, VQS_BENCH_TOKEN: token });
  // A namespace of A's per scenario: the storage it filled in one does not refuse the next.
  const tokenA = (scenario: string) =>
    issuer.sign(
      {
        owner_id: "team_a",
        project_id: `prj_noisy_${scenario}`,
        ...(scenario === "a_storage_full" ? { owner_id: "team_full" } : {}),
      },
      "3h",
    );
  const tokenB = await issuer.sign({ owner_id: "team_a", project_id: "prj_quiet" }, "3h");
  // Timers are sharded by namespace: B must not share the timer flood's shard.
  const shardOf = (project: string) =>
    timerShard(makeNamespace("team_a", project, "production", null).key);
  if (shardOf("prj_quiet") === shardOf("prj_noisy_a_timer_flood")) {
    throw new Error("B shares A's timer shard: rename one");
  }
  const results: Record<string, { b: QuietResult; a: unknown; load: number }> = {};
  const measure = async (name: string) => {
    let a: ReturnType<typeof startWorker> | null = null;
    let tallied: Promise<WorkerMessage & { type: "noisy" }> | null = null;
    if (!name.startsWith("b_alone")) {
      a = startWorker("noisy", name, env(await tokenA(name)));
      tallied = a.next("noisy"); // a scenario may end by itself (all its timers sent)
      tallied.catch(() => undefined);
      await a.next("ready");
    }
    const b = startWorker("quiet", name, env(tokenB));
    const { result } = await b.next("quiet");
    const load = loadAverage();
    let tally: unknown = null;
    if (a && tallied) {
      if (a.child.connected) a.child.send({ type: "stop" });
      const done = await Promise.race([tallied, sleep(60_000).then(() => null)]).catch(() => null);
      tally = done?.tally ?? "no answer";
      a.child.kill();
    }
    results[name] = { b: result, a: tally, load };
    console.log(name, JSON.stringify(results[name]));
  };

  // B alone right before each scenario: the machine is shared, and its load drifts over a run,
  // so each scenario is compared with the B-alone run next to it.
  const ratios: Record<string, unknown> = {};
  const kinds = ["publish", "receive", "timerLate", "push"] as const;
  const only = args.only?.split(",");
  for (const name of Object.keys(NOISY).filter((n) => !only || only.includes(n))) {
    await measure(`b_alone_before_${name}`);
    await measure(name);
    const [alone, r] = [results[`b_alone_before_${name}`]!, results[name]!];
    const row: Record<string, unknown> = {
      load: { alone: alone.load, noisy: r.load },
      bErrors: r.b.errors,
      a: r.a,
    };
    let met = r.b.errors === 0;
    for (const k of kinds) {
      const [base, noisy] = [alone.b[k], r.b[k]];
      row[k] = {
        p50: round(noisy.p50 / Math.max(1, base.p50)),
        p99: round(noisy.p99 / Math.max(1, base.p99)),
      };
      if (!(noisy.n > 0 && noisy.p99 <= Math.max(1.5 * base.p99, base.p99 + 50))) met = false;
    }
    row.targetsMet = met;
    ratios[name] = row;
  }
  const out = {
    quick: QUICK,
    seconds: SECONDS,
    timers: TIMERS,
    gateways: gatewayCount,
    results,
    ratios,
  };
  await writeFile(args.out, JSON.stringify(out, null, 2));
  console.log(JSON.stringify(ratios, null, 2));
}

(args.role ? worker(args.role, args.scenario ?? "") : main()).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

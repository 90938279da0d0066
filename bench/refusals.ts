// `npm run bench:refusals [-- --requests N]`: what a refused request costs the gateway against an
// accepted publish. One nats-server and one gateway process; the same small publish sent N times
// over 32 keep-alive connections by a tenant whose rate limit admits it (201), by one whose limit
// refuses nearly all (429 rate_limited), and as a batch by one whose storage quota is full (429
// storage_quota_exceeded). The figure is the gateway process's CPU per request (/proc), each kind's
// as a ratio to the accepted publish's, measured in the same run. Never part of `npm test`.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Agent, request } from "undici";
import { benchGatewayEnv, startGatewayProcess } from "./lib/gateways.js";
import { startBenchNats } from "./lib/nats-server.js";
import { loadAverage, sampleProc } from "./lib/proc.js";
import { round } from "./lib/stats.js";
import { AUDIENCE, ISSUER, startIssuer } from "../test/helpers/issuer.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "20000" },
    rounds: { type: "string" },
    "cpu-prof": { type: "boolean", default: false },
    only: { type: "string" },
  },
});
const N = Number(args.requests);
const ROUNDS = Number(args.rounds ?? 2);
const CONNECTIONS = 32;
const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: 30_000 });

/** Sends `n` requests over CONNECTIONS loops; answers the statuses seen and the wall time. */
async function send(base: string, token: string, path: string, n: number) {
  const statuses = new Map<number, number>();
  let left = n;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) {
        const res = await request(`${base}${path}`, {
          method: "POST",
          dispatcher: agent,
          headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
          body: "x",
        });
        await res.body.dump();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
    }),
  );
  return { statuses: Object.fromEntries(statuses), seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "vqs-bench-refusals-"));
  const nats = await startBenchNats(
    join(dir, "store"),
    join(BENCH_DIR, "results", "refusals-nats.log"),
  );
  const issuer = await startIssuer();
  const gw = await startGatewayProcess({
    logFile: join(BENCH_DIR, "results", "refusals-gateway.log"),
    // For `npm run bench:profile -- bench/results/profiles/refusals`: where the CPU went.
    ...(args["cpu-prof"]
      ? {
          nodeFlags: [
            "--cpu-prof",
            `--cpu-prof-dir=${join(BENCH_DIR, "results", "profiles", "refusals")}`,
          ],
        }
      : {}),
    env: benchGatewayEnv(nats.url, issuer.jwksUrl, ISSUER, AUDIENCE, {
      LOG_LEVEL: "error",
      VQS_RATE_LIMIT_PER_SECOND: "1000000",
      VQS_RATE_LIMIT_TEAMS: "team_refused=1",
      VQS_NAMESPACE_MAX_BYTES_TEAMS: "team_full=1",
    }),
    // The cost of a refusal, not how many there are: a held request (production's 200 ms after
    // a refusal on its connection) would spread the idle gateway's own CPU over a few of them.
    options: { rateLimitHoldMs: 0 },
  });
  const accepted = await issuer.token({ project_id: "prj_accepted" }, { expiresIn: "1h" });
  const refused = await issuer.token(
    { project_id: "prj_refused", owner_id: "team_refused" },
    { expiresIn: "1h" },
  );
  const full = await issuer.token(
    { project_id: "prj_full", owner_id: "team_full" },
    { expiresIn: "1h" },
  );
  // The full tenant's quota of 1 byte is exceeded by its first message.
  await send(gw.url, full, "/api/v3/topic/full", 1);
  const all = {
    accepted: [accepted, "/api/v3/topic/accepted"],
    rate_limited: [refused, "/api/v3/topic/refused"],
    storage_quota_exceeded: [full, "/api/v3/topic/full"],
  } as const;
  const only = args.only?.split(",");
  const kinds = Object.fromEntries(
    Object.entries(all).filter(([k]) => k === "accepted" || !only || only.includes(k)),
  );
  for (const [token, path] of Object.values(kinds)) await send(gw.url, token, path, 2000); // warm
  const perRequestUs: Record<string, number[]> = {};
  const seen: Record<string, unknown> = {};
  // Interleaved rounds: the machine's load drifts, each round compares like with like.
  for (let round_ = 0; round_ < ROUNDS; round_++) {
    for (const [kind, [token, path]] of Object.entries(kinds)) {
      const before = sampleProc(gw.pid);
      const r = await send(gw.url, token, path, N);
      const after = sampleProc(gw.pid);
      const us = before && after ? ((after.cpuSeconds - before.cpuSeconds) / N) * 1e6 : NaN;
      (perRequestUs[kind] ??= []).push(round(us));
      seen[kind] = { ...r.statuses, perSecond: round(N / r.seconds) };
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(perRequestUs.accepted!);
  const out = {
    requests: N,
    load: loadAverage(),
    gatewayCpuUsPerRequest: perRequestUs,
    ratioToAccepted: Object.fromEntries(
      Object.entries(perRequestUs).map(([k, xs]) => [k, round(median(xs) / base)]),
    ),
    lastRound: seen,
  };
  console.log(JSON.stringify(out, null, 2));
  await gw.stop();
  await issuer.close();
  await nats.stop();
  await agent.close();
  await rm(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

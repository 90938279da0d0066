// `npm run bench:floor [-- --rounds n] [-- --build]`: the HTTP floor scenario of `npm run bench`
// (lib/floor/floor.ts) alone and repeated: each round measures the bare Fastify (204) and then the
// gateway, publish, receive 10 and acknowledge, 1 KiB, 64 in flight, and gives each operation's
// multiple of the floor; the answer is the median of the rounds' multiples (after a warm-up round). One round lasts about
// 15 s, so a round sees nearly one machine even when neighbours come and go, which a single
// measurement inside `npm run bench` does not. `--build` measures the gateway as production runs
// it, compiled (`npm run build:bench` first), rather than from the sources under tsx.
// Everything on 127.0.0.1, bounded.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { floorScenario, type FloorResult } from "./lib/floor/floor.js";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import { topicStream } from "./lib/gw.js";
import { benchServers, elapsedLog } from "./lib/standalone.js";
import { fillStream } from "./lib/raw.js";
import { round } from "./lib/stats.js";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, build: { type: "boolean", default: false } },
});
const rounds = Math.min(20, Math.max(1, Number(values.rounds) || 5));
const log = elapsedLog();
const servers = await benchServers("vqs-bench-floor-");
const { root, issuer } = servers;
const endTimeLimit = boundRun(servers.cleanup, (rounds * 40 + 100) * 1000, log);

try {
  const { nats, gateway } = await servers.start({
    natsStore: join(root, "store"),
    natsLog: join(root, "nats-server.log"),
    logFile: join(root, "gateway.log"),
    build: values.build,
  });
  const nc = await connect({ servers: nats.url, name: "vqs-bench-floor" });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const client = createHttpClient([gateway.url]);
  const api = new GatewayApi(client, issuer.token);
  const payload = randomBytes(1024);
  const ops = ["publish", "receive", "ack"] as const;
  const multiples: Record<(typeof ops)[number], number[]> = { publish: [], receive: [], ack: [] };
  const lines: string[] = [];
  // Round 0 is a warm-up (V8 optimises the hot paths of both servers only after thousands of
  // calls): measured, not counted.
  for (let r = 0; r <= rounds; r++) {
    const load = loadAverage();
    const result: FloorResult = await floorScenario(
      {
        api,
        procs: { gatewayPids: [gateway.pid], natsPid: nats.pid },
        token: issuer.token,
        fill: async (topic, n) => {
          const s = await topicStream({ api, jsm }, topic, payload);
          await fillStream(js, s, payload, n, 120, s.makeHeaders);
        },
        log,
      },
      { warmupMs: 500, durationMs: 1500, inFlight: 64, payload },
    );
    const cells = ops.map((op) => {
      const g = result.gateway[op].cpuUsPerRequest;
      const f = result.floor[op].cpuUsPerRequest;
      if (r > 0) multiples[op].push(g / f);
      return `${g} / ${f} (${round(g / f, 2)}x)`;
    });
    if (r > 0) lines.push(`| ${r} | ${load} | ${cells.join(" | ")} |`);
    log(`round ${r}${r === 0 ? " (warm-up)" : ""}: ${cells.join(", ")}`);
  }
  client.close();
  await nc.close();
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  process.stdout.write(
    [
      "",
      `vqs bench:floor, ${new Date().toISOString()}: gateway (${values.build ? "compiled build" : "sources under tsx"}) / floor CPU µs per request, 1 KiB, 64 in flight`,
      "",
      "| round | load average | publish | receive 10 | acknowledge |",
      "| ---: | ---: | ---: | ---: | ---: |",
      ...lines,
      `| median | | ${ops.map((op) => `${round(median(multiples[op]), 2)}x`).join(" | ")} |`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit();
  await servers.cleanup();
}

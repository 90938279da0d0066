// `npm run bench:long-poll [-- --quick] [options]`: long polling at scale, on one gateway process.
// N receivers (10,000) spread over G consumer groups (100; one group on each of G topics) each hold
// one keep-alive connection and loop over ReceiveMessages with Vqs-Wait-Seconds (20). Measured:
// the pull requests NATS holds for them (the target: not one per waiter), and that messages
// published while they wait each arrive once. See bench/README.md.
// Never part of `npm test`. All traffic stays on 127.0.0.1; every loop is bounded in count and time.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient, parseMultipart } from "./lib/http-client.js";
import { openFilesLimit } from "./lib/nats-server.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage } from "./lib/proc.js";
import { GROUP, ReceiverFleet, stampMessage } from "./lib/receiver-fleet.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { round, sleep } from "./lib/stats.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = dirname(BENCH_DIR);
const GATEWAY_LOG = join(BENCH_DIR, "results", "long-poll-gateway.log");
const NATS_LOG = join(BENCH_DIR, "results", "long-poll-nats-server.log");
/** Open files each process needs beyond one per receiver (NATS, logs, the publisher, node). */
const SPARE_FILES = 512;

const HELP = `npm run bench:long-poll -- [options]
  --quick              2,000 waiters over 20 groups, 10 s waits
  --waiters <n>        receivers, one keep-alive connection each (default 10000; capped by the
                       open-files limit, which the npm script raises to the hard limit)
  --groups <n>         consumer groups they are spread over, one per topic (default 100)
  --wait-seconds <s>   Vqs-Wait-Seconds of each long poll (default 20, the API's maximum)
  --messages <n>       messages published while they wait, round-robin over the groups (default 200)
  --out <file>         results file (default bench/results/long-poll.json)`;

function parseOptions() {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      waiters: { type: "string" },
      groups: { type: "string" },
      "wait-seconds": { type: "string" },
      messages: { type: "string", default: "200" },
      out: { type: "string", default: join(BENCH_DIR, "results", "long-poll.json") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const q = values.quick;
  const num = numberOption;
  const wanted = Math.round(num("waiters", values.waiters ?? (q ? "2000" : "10000"), 1, 1e6));
  const groups = Math.round(num("groups", values.groups ?? (q ? "20" : "100"), 1, 1000));
  return {
    quick: q,
    wantedWaiters: wanted,
    waiters: Math.max(groups, Math.min(wanted, (openFilesLimit("self") ?? 1024) - SPARE_FILES)),
    groups,
    waitSeconds: Math.round(
      num("wait-seconds", values["wait-seconds"] ?? (q ? "10" : "20"), 3, 20),
    ),
    messages: Math.round(num("messages", values.messages, 1, 100_000)),
    out: values.out,
  };
}

const log = elapsedLog();

/** Polls `cond` every `stepMs` until it holds or `maxMs` passed; answers whether it held. */
async function until(cond: () => boolean | Promise<boolean>, maxMs: number, stepMs = 250) {
  const deadline = performance.now() + maxMs;
  for (let i = 0; i < 1_000_000 && performance.now() < deadline; i++) {
    if (await cond()) return true;
    await sleep(stepMs);
  }
  return cond();
}

/** Waiting pull requests (consumer info num_waiting) over the groups' consumers. */
async function pullsHeld(jsm: JetStreamManager) {
  let held = 0;
  let max = 0;
  let consumers = 0;
  for await (const s of jsm.streams.list()) {
    // Topic streams (VQS_<hash>); the service's own streams hold no group consumers.
    if (!/^VQS_[0-9a-f]{32}$/.test(s.config.name)) continue;
    for await (const c of jsm.consumers.list(s.config.name)) {
      consumers++;
      held += c.num_waiting;
      max = Math.max(max, c.num_waiting);
    }
  }
  return { held, maxPerConsumer: max, consumers };
}

async function main(): Promise<void> {
  const o = parseOptions();
  const servers = await benchServers("vqs-bench-lp-");
  const endTimeLimit = boundRun(servers.cleanup, (o.quick ? 5 : 12) * 60_000, log);
  await mkdir(join(BENCH_DIR, "results"), { recursive: true });
  await writeFile(GATEWAY_LOG, "");
  await writeFile(NATS_LOG, "");
  const startedAt = new Date();
  try {
    if (o.waiters < o.wantedWaiters) {
      log(
        `open-files limit ${openFilesLimit("self")}: ${o.waiters} waiters instead of ` +
          `${o.wantedWaiters} (each needs a socket in this process and in the gateway)`,
      );
    }
    const { nats, gateway: gw } = await servers.start({
      natsStore: join(servers.root, "store"),
      natsLog: NATS_LOG,
      logFile: GATEWAY_LOG,
    });
    const nc = await connect({ servers: nats.url, name: "vqs-bench-long-poll" });
    servers.onCleanup(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const machine = await machineInfo(nats);
    log(
      `vqs long-poll bench: ${o.waiters} waiters over ${o.groups} groups, Vqs-Wait-Seconds ` +
        `${o.waitSeconds}; ${machine.cores} cores, nats-server ${machine.nats}; load average ` +
        `${machine.loadAverageAtStart}`,
    );

    // Topics and groups: one message each (creates the stream), received and acknowledged.
    const topics = Array.from({ length: o.groups }, (_, i) => `lp-${String(i).padStart(4, "0")}`);
    const client = createHttpClient([gw.url]);
    servers.onCleanup(() => client.close());
    const api = new GatewayApi(client, servers.issuer.token);
    let seq = 0;
    const stored: number[] = [];
    const publish = async (topic: string) => {
      const s = seq++;
      const res = await api.publish(topic, stampMessage(s));
      if (res.status !== 201) throw new Error(`publish HTTP ${res.status}`);
      stored.push(s);
    };
    for (const t of topics) {
      await publish(t);
      const res = await api.receive(t, GROUP, 10);
      if (res.status !== 200) continue;
      for (const p of parseMultipart(res.contentType, res.body)) {
        await api.ack(t, GROUP, p.headers.get("vqs-receipt-handle") ?? "");
      }
    }
    const warmUp = stored.length;

    // Every receiver connects (one immediate receive each), then all wait.
    const fleet = new ReceiverFleet(gw.url, servers.issuer.token, topics, o.waiters, o.waitSeconds);
    servers.onCleanup(() => fleet.stop());
    await fleet.connect(256);
    let t = performance.now();
    fleet.start();
    const allWaiting = await until(async () => ((await gw.waiting()) ?? 0) >= o.waiters, 120_000);
    const waiting = (await gw.waiting()) ?? 0;
    const ramp = await pullsHeld(jsm);
    log(
      `${waiting} waiting after ${round((performance.now() - t) / 1000, 1)} s` +
        `${allWaiting ? "" : " (not all!)"}: pulls held ${ramp.held} on ${ramp.consumers} ` +
        `consumers (max ${ramp.maxPerConsumer})`,
    );

    // Messages while they wait, 25 ms apart: each must arrive once.
    const sent: Promise<void>[] = [];
    t = performance.now();
    for (let i = 0; i < o.messages; i++) {
      await sleep(Math.max(0, t + i * 25 - performance.now()));
      sent.push(publish(topics[i % topics.length]!));
    }
    await Promise.all(sent);
    const seqs = stored.slice(warmUp);
    await until(() => seqs.every((s) => fleet.received.has(s)), 30_000, 100);
    await sleep(500); // a second copy of one would arrive now
    const missing = seqs.filter((s) => !fleet.received.has(s)).length;
    const twice = seqs.filter((s) => (fleet.received.get(s) ?? 0) > 1).length;
    const steady = await pullsHeld(jsm);
    log(
      `${seqs.length} published while waiting: missing ${missing}, twice ${twice}; pulls held ` +
        `${steady.held} (max ${steady.maxPerConsumer})`,
    );
    await fleet.stop();

    const perWaiter = round(Math.max(ramp.held, steady.held) / Math.max(1, waiting), 3);
    const results = {
      tool: "vqs bench:long-poll (bench/long-poll.ts)",
      startedAt: startedAt.toISOString(),
      options: { ...o, out: relative(REPO_DIR, o.out) },
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      waiting,
      pullsHeld: { afterRamp: ramp, afterMessages: steady, perWaiter },
      messages: { published: seqs.length, missing, twice },
      errors: { count: fleet.counts.errors, kinds: Object.fromEntries(fleet.errorKinds) },
    };
    await mkdir(dirname(o.out), { recursive: true });
    await writeFile(o.out, JSON.stringify(results, null, 2) + "\n");
    const pass = perWaiter < 1 && missing === 0 && twice === 0;
    process.stdout.write(
      [
        "",
        `vqs bench:long-poll, ${results.startedAt}: ${waiting} waiters over ${o.groups} groups`,
        "",
        "| figure | measured |",
        "| --- | --- |",
        `| pull requests held in NATS | ${Math.max(ramp.held, steady.held)} on ${ramp.consumers} consumers: ${perWaiter} a waiter |`,
        `| messages published while waiting: missing / twice | ${seqs.length}: ${missing} / ${twice} |`,
        "",
        `Target (not one pull per waiter, every message once): ${pass ? "met" : "NOT MET"}`,
        `Results: ${relative(REPO_DIR, o.out)}; receiver errors: ${fleet.counts.errors} ${JSON.stringify(results.errors.kinds)}`,
        "",
      ].join("\n"),
    );
  } finally {
    endTimeLimit();
    await servers.cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});

// `npm run bench:flow [-- --quick]`: flow control (issue 34) in one run, on one nats-server and
// one gateway: (1) plain push against keyed push (flowControl {key, concurrency: 1} over 10,000
// keys) in alternating slices, rate and gateway CPU per message; (2) one key limited to 10/s
// (burst 1) on a polled group, receive in a loop, delivered/s; (3) ordered keys on a polled
// group: deliveries out of order and the rate per key. Backlogs are written straight into the
// topic's stream with the header the gateway keeps a message's own headers in. Never part of
// `npm test`; everything on 127.0.0.1, bounded.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { H } from "../src/nats/messages/message-codec.js";
import { GatewayApi, topicStream } from "./lib/gw.js";
import { createHttpClient, parseMultipart, type Part } from "./lib/http-client.js";
import { numberOption } from "./lib/options.js";
import { boundRun, loadAverage, sampleProc } from "./lib/proc.js";
import { startPushEndpoint } from "./lib/push/endpoints.js";
import { pushOff, pushOn } from "./lib/push/throughput.js";
import { fillStream } from "./lib/raw.js";
import { targetsTable, type Target } from "./lib/report.js";
import { benchServers, elapsedLog, machineInfo } from "./lib/standalone.js";
import { median, round, sleep } from "./lib/stats.js";

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), "results");
const HELP = `npm run bench:flow -- [options]
  --quick              shorter slices, 10 s of the rate-limited key, fewer ordered keys
  --keys <n>           keys of the keyed push group (default 10000)
  --in-flight <n>      push.maxConcurrency of both pushed groups (default 64)
  --rate-seconds <n>   how long the rate-limited key is received (default 60; quick 10)
  --ordered-keys <n>   keys of the ordered group, 50 messages each (default 100; quick 20)
  --out <file>         results file (default bench/results/flow.json)`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    keys: { type: "string" },
    "in-flight": { type: "string" },
    "rate-seconds": { type: "string" },
    "ordered-keys": { type: "string" },
    out: { type: "string", default: join(RESULTS, "flow.json") },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const quick = values.quick;
const num = (
  name: "keys" | "in-flight" | "rate-seconds" | "ordered-keys",
  or: string,
  max: number,
) => numberOption(name, values[name] ?? or, 1, max);
const KEYS = num("keys", "10000", 1_000_000);
const IN_FLIGHT = num("in-flight", "64", 1000);
const RATE_SECONDS = num("rate-seconds", quick ? "10" : "60", 3600);
const ORDERED_KEYS = num("ordered-keys", quick ? "20" : "100", 10_000);
const PER_ORDERED_KEY = 50;
const SLICES = quick ? 4 : 8; // plain, keyed, keyed, plain, ...
const SLICE_MS = quick ? 3000 : 5000;
const SETTLE_MS = quick ? 500 : 1000;
const WARMUP_MS = quick ? 1500 : 3000;
const PAYLOAD = Buffer.alloc(256, 0x61);
/** The message header every group here keys on, and the ordered backlog's index per key. */
const KEY = "tenant";
const INDEX = "bench-n";

const log = elapsedLog();
const servers = await benchServers("vqs-bench-flow-");
const endTimeLimit = boundRun(servers.cleanup, (quick ? 8 : 20) * 60_000, log);

try {
  await mkdir(RESULTS, { recursive: true });
  const { nats, gateway } = await servers.start({
    natsStore: join(servers.root, "store"),
    natsLog: join(RESULTS, "nats-server.log"),
    logFile: join(RESULTS, "gateway-1.log"),
  });
  const nc = await connect({ servers: nats.url, name: "vqs-bench-flow" });
  servers.onCleanup(() => nc.close());
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const client = createHttpClient([gateway.url]);
  servers.onCleanup(() => client.close());
  const api = new GatewayApi(client, servers.issuer.token);
  const endpoint = await startPushEndpoint({
    logFile: join(RESULTS, "push-endpoint-plain.log"),
  });
  servers.onCleanup(() => endpoint.stop());
  const startedAt = new Date();
  const machine = await machineInfo(nats);
  log(
    `vqs bench:flow (${quick ? "quick" : "full"}): ${machine.cores} cores, Node ${machine.node}, nats-server ${machine.nats}`,
  );

  /** A topic with `count` messages written into its stream, each with the own headers `own(i)`
   * (the gateway's header for them, TAB-joined); one at a time keeps them in order. */
  const backlog = async (
    topic: string,
    count: number,
    own: (i: number) => string[],
    one = false,
  ) => {
    const s = await topicStream({ api, jsm }, topic, PAYLOAD);
    let i = 0;
    const headers = () => {
      const h = s.makeHeaders();
      h.set(H.headers, own(i++).join("\t"));
      return h;
    };
    const f = await fillStream(js, s, PAYLOAD, count, 300, headers, one ? 1 : 256);
    if (f.stored < count) throw new Error(`${topic}: ${f.stored} of ${count} messages stored`);
    log(`  ${topic}: ${count.toLocaleString("en-US")} messages in ${f.seconds.toFixed(1)} s`);
  };
  const settings = async (topic: string, group: string, body: unknown) => {
    const res = await api.putSettings(topic, group, body);
    if (res.status !== 200)
      throw new Error(`PUT ${topic}/${group} settings: HTTP ${res.status} ${res.body.toString()}`);
  };
  /** `pollers` loops of receive 10 + ack each until `done()` or `ms`; `onPart` sees each acked
   * part with a key (not the topic's first message, published without one). */
  type OnPart = (p: Part, at: number) => void;
  const poll = async (topic: string, n: number, ms: number, onPart: OnPart, done = () => false) => {
    const group = topic.replace("flow-", "");
    const deadline = performance.now() + ms;
    let errors = 0;
    await Promise.all(
      Array.from({ length: n }, async () => {
        while (performance.now() < deadline && !done()) {
          const res = await api.receive(topic, group).catch(() => null);
          if (res?.status !== 200) {
            if (res?.status !== 204) errors++;
            await sleep(20);
            continue;
          }
          for (const part of parseMultipart(res.contentType, res.body)) {
            const handle = part.headers.get("vqs-receipt-handle") ?? "";
            const ack = await api.ack(topic, group, handle).catch(() => null);
            if (ack?.status !== 204) errors++;
            else if (part.headers.has(KEY)) onPart(part, performance.now());
          }
        }
      }),
    );
    return errors;
  };

  // (1) Plain push against keyed push: two groups reading one topic's backlog, one at a time.
  const perGroup = Math.ceil(
    12_000 * ((SLICES / 2) * (SLICE_MS + SETTLE_MS + 1500) + 2 * WARMUP_MS) * 1e-3,
  );
  await backlog("flow-push", perGroup, (i) => [KEY, `k${i % KEYS}`]);
  const modes = {
    plain: {},
    keyed: { flowControl: { key: KEY, concurrency: 1 } },
  } as const;
  type Mode = keyof typeof modes;
  let pushed: Mode | null = null; // the group pushed now; two slices of one group in a row stay on
  const on = async (m: Mode) => {
    if (pushed === m) return;
    if (pushed) await pushOff(api, "flow-push", pushed, endpoint);
    await pushOn(api, "flow-push", (pushed = m), endpoint, IN_FLIGHT, true, modes[m]);
  };
  log(
    `push: warm-up, ${WARMUP_MS / 1000} s per group, twice; then ${SLICES} slices of ${SLICE_MS / 1000} s`,
  );
  for (const m of ["plain", "keyed", "plain", "keyed"] as const) {
    await on(m);
    await sleep(WARMUP_MS);
  }
  const slices: Record<Mode, { rate: number; cpuUs: number }[]> = { plain: [], keyed: [] };
  for (let s = 0; s < SLICES; s++) {
    const m: Mode = s % 4 === 0 || s % 4 === 3 ? "plain" : "keyed";
    await on(m);
    await sleep(SETTLE_MS);
    const [a, c0] = [await endpoint.read(), sampleProc(gateway.pid)];
    await sleep(SLICE_MS);
    const [b, c1] = [await endpoint.read(), sampleProc(gateway.pid)];
    const n = b.ok - a.ok;
    const cpuUs = c0 && c1 && n > 0 ? ((c1.cpuSeconds - c0.cpuSeconds) / n) * 1e6 : NaN;
    slices[m].push({ rate: n / ((b.at - a.at) / 1000), cpuUs });
    log(
      `  ${m}: ${Math.round(n / ((b.at - a.at) / 1000))} msg/s, gateway ${Math.round(cpuUs)} µs/msg`,
    );
  }
  if (pushed) await pushOff(api, "flow-push", pushed, endpoint);
  const summary = (m: Mode) => ({
    msgsPerSec: Math.round(median(slices[m].map((x) => x.rate))),
    gatewayUsPerMsg: Math.round(median(slices[m].map((x) => x.cpuUs))),
    slices: slices[m].map((x) => Math.round(x.rate)),
  });
  const push = {
    keys: KEYS,
    inFlight: IN_FLIGHT,
    plain: summary("plain"),
    keyed: summary("keyed"),
  };
  const pushRatio = round(push.keyed.msgsPerSec / push.plain.msgsPerSec);
  const cpuRatio = round(push.keyed.gatewayUsPerMsg / push.plain.gatewayUsPerMsg);

  // (2) One key at 10/s, burst 1, on a polled group: two pollers receive in a loop.
  await settings("flow-rate", "rate", {
    flowControl: { key: KEY, rate: { limit: 10, periodSeconds: 1, burst: 1 } },
  });
  await backlog("flow-rate", Math.ceil(RATE_SECONDS * 12 + 100), () => [KEY, "one"]);
  await sleep(500); // the settings look-up (50 ms), generously
  log(`rate: one key at 10/s for ${RATE_SECONDS} s`);
  const times: number[] = [];
  const t0 = performance.now();
  const rateErrors = await poll("flow-rate", 2, RATE_SECONDS * 1000, (_p, at) => times.push(at));
  const seconds = (performance.now() - t0) / 1000;
  let most = 0; // the most deliveries in any one second
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= 1000) i++;
    most = Math.max(most, j - i + 1);
  }
  const rate = {
    seconds: round(seconds, 1),
    delivered: times.length,
    perSecond: round(times.length / seconds),
    mostInOneSecond: most,
    errors: rateErrors,
  };
  log(`  ${rate.delivered} delivered: ${rate.perSecond}/s, at most ${most} in one second`);

  // (3) Ordered keys on a polled group: each key's messages in publish order (written one at a
  // time, so the stream holds them in order), eight pollers.
  const total = ORDERED_KEYS * PER_ORDERED_KEY;
  await settings("flow-ordered", "ordered", { flowControl: { key: KEY, ordered: true } });
  await backlog(
    "flow-ordered",
    total,
    (i) => [KEY, `o${i % ORDERED_KEYS}`, INDEX, String(Math.floor(i / ORDERED_KEYS))],
    true,
  );
  await sleep(500);
  log(`ordered: ${ORDERED_KEYS} keys × ${PER_ORDERED_KEY} messages, 8 pollers`);
  const seen = new Map<string, { next: number; count: number; first: number; last: number }>();
  let delivered = 0;
  let violations = 0;
  let redeliveries = 0;
  const o0 = performance.now();
  const orderedErrors = await poll(
    "flow-ordered",
    8,
    (quick ? 60 : 300) * 1000,
    (p, at) => {
      const key = p.headers.get(KEY) ?? "";
      const n = Number(p.headers.get(INDEX));
      const k = seen.get(key) ?? { next: 0, count: 0, first: at, last: at };
      seen.set(key, k);
      if (n === k.next - 1 && Number(p.headers.get("vqs-delivery-count")) > 1) redeliveries++;
      else if (n !== k.next) violations++;
      k.next = Math.max(k.next, n + 1);
      k.count++;
      k.last = at;
      delivered++;
    },
    () => delivered >= total,
  );
  const oSeconds = (performance.now() - o0) / 1000;
  const perKey = [...seen.values()].map(
    (k) => k.count / Math.max(0.001, (k.last - k.first) / 1000),
  );
  const ordered = {
    keys: ORDERED_KEYS,
    messages: total,
    delivered,
    seconds: round(oSeconds, 1),
    msgsPerSec: round(delivered / oSeconds, 1),
    perKeyMsgsPerSec: { median: round(median(perKey), 1), min: round(Math.min(...perKey), 1) },
    violations,
    redeliveries,
    errors: orderedErrors,
  };
  log(
    `  ${delivered}/${total} in ${ordered.seconds} s, ${violations} out of order, per key ${ordered.perKeyMsgsPerSec.median}/s (median)`,
  );

  const t = (name: string, target: string, value: number, pass: boolean, note?: string) =>
    ({ name, target, value, pass, ...(note ? { note } : {}) }) satisfies Target;
  const all = `${delivered}/${total} delivered`;
  const targets: Target[] = [
    t("keyed ÷ plain push rate", "≥ 0.8", pushRatio, pushRatio >= 0.8),
    t("keyed ÷ plain gateway CPU/msg", "≤ 1.25", cpuRatio, cpuRatio <= 1.25),
    t("key at 10/s: delivered/s", "10 ± 1", rate.perSecond, Math.abs(rate.perSecond - 10) <= 1),
    t("ordered: out of order", "0", violations, violations === 0 && delivered === total, all),
  ];
  const file = {
    tool: "vqs bench:flow (bench/flow.ts)",
    mode: quick ? "quick" : "full",
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    loadAverageAtEnd: loadAverage(),
    flow: { push, rate, ordered },
    targets,
  };
  await mkdir(dirname(values.out), { recursive: true });
  await writeFile(values.out, JSON.stringify(file, null, 2) + "\n");
  const p = (m: Mode) =>
    `| ${m} | ${push[m].msgsPerSec.toLocaleString("en-US")} | ${push[m].gatewayUsPerMsg} | ${push[m].slices.join(", ")} |`;
  process.stdout.write(
    [
      "",
      `vqs bench:flow, ${file.mode} run, ${file.startedAt}: ${machine.cores} cores, Node ${machine.node}, nats-server ${machine.nats}, load ${file.loadAverageAtEnd}`,
      "",
      `Push, ${KEYS.toLocaleString("en-US")} keys at concurrency 1, ${IN_FLIGHT} in flight:`,
      "",
      "| group | msg/s (median) | gateway µs/msg | slices msg/s |",
      "| --- | ---: | ---: | --- |",
      p("plain"),
      p("keyed"),
      "",
      `Rate-limited key (10/s, burst 1): ${rate.delivered} in ${rate.seconds} s = ${rate.perSecond}/s, at most ${most} in one second`,
      `Ordered: ${delivered}/${total} in ${ordered.seconds} s (${ordered.msgsPerSec} msg/s), ${violations} out of order, ${redeliveries} redelivered; per key ${ordered.perKeyMsgsPerSec.median} msg/s median, ${ordered.perKeyMsgsPerSec.min} least`,
      "",
      targetsTable(targets),
      "",
      `Results: ${relative(process.cwd(), values.out)}`,
      "",
    ].join("\n"),
  );
} finally {
  endTimeLimit();
  await servers.cleanup();
}

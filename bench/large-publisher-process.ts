// bench:large's small publisher, in a process of its own so that the client work of the large
// uploads (in the parent) is not in the latency it times. Started by bench/lib/large/publisher.ts
// as `node --import tsx bench/large-publisher-process.ts`. IPC with the parent:
//   -> {type: "ready"}
//   <- {type: "run", id, url, token, topic, rate, seconds}
//   -> {type: "done", id, samples, errors, errorKinds, eventLoopDelayP99Ms}
// Publishes 1 KiB bodies open loop (a slow answer does not delay the next send); exits when the
// parent goes away.
import { randomBytes } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { GatewayApi } from "./lib/gw.js";
import { createHttpClient } from "./lib/http-client.js";
import { Recorder, round, sleep } from "./lib/stats.js";

export interface RunRequest {
  readonly type: "run";
  readonly id: number;
  readonly url: string;
  readonly token: string;
  readonly topic: string;
  readonly rate: number;
  readonly seconds: number;
}

export interface RunResult {
  readonly type: "done";
  readonly id: number;
  readonly samples: number[];
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  /** This process's own event-loop delay p99 over the run (its share of the machine's waits). */
  readonly eventLoopDelayP99Ms: number;
}

/** One client per gateway (the A/B has two), kept alive across runs. */
const apis = new Map<string, GatewayApi>();

async function run(r: RunRequest): Promise<RunResult> {
  let api = apis.get(r.url);
  if (!api) {
    api = new GatewayApi(createHttpClient([r.url]), r.token);
    apis.set(r.url, api);
  }
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const rec = new Recorder();
  const payload = randomBytes(1024);
  const interval = 1000 / r.rate;
  const n = Math.round(r.rate * r.seconds);
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = t0 + i * interval - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      (async () => {
        const t = performance.now();
        try {
          const res = await api.publish(r.topic, payload);
          if (res.status === 201) rec.record(performance.now() - t);
          else rec.error(`HTTP ${res.status}`);
        } catch (err) {
          rec.error(err instanceof Error ? err.message : String(err));
        }
      })(),
    );
  }
  await Promise.all(pending);
  delay.disable();
  return {
    type: "done",
    id: r.id,
    samples: rec.samples,
    errors: rec.errors,
    errorKinds: Object.fromEntries(rec.errorKinds),
    eventLoopDelayP99Ms: round(delay.percentile(99) / 1e6, 1),
  };
}

if (process.send) {
  process.on("message", (m: RunRequest) => {
    if (m.type !== "run") return;
    void run(m).then((result) => process.send!(result));
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ type: "ready" });
}

// The nemesis's flow-control scenario, in CI: gateways and servers killed and paused (a gateway
// SIGKILLed and restarted, the other SIGSTOPped, the stream leader SIGKILLed, a follower
// SIGSTOPped) under publishes over 20 keys, each in sequence, read by two polled groups: one
// `ordered`, one with a per-key concurrency of 2 and a rate of 4/s with a burst of 2. The flow
// checker (check/flow-checker.ts) must find per-key order kept among acknowledged messages, no
// key with more leases certainly held than its limit, no key handed out more than limit + burst
// in a period, and nothing stored undelivered. Runs on the current nats-server only, as the
// short schedule (vitest.config.ts).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { natsServerBinary } from "../../src/dev/nats-server-process.js";
import { killGateway, killNode, pauseGateway, pauseNode } from "./faults.js";
import { runFlowRound } from "./flow-round.js";
import { startEnvironment } from "./lab/environment.js";
import { missingPrerequisites } from "./lab/prerequisites.js";
import { seededRandom } from "./schedules.js";

const missing = missingPrerequisites();

describe.skipIf(missing.length > 0)("the nemesis's flow-control scenario", () => {
  it("keeps order, concurrency and rate per key and loses nothing under kills and pauses", async () => {
    const bin = natsServerBinary();
    if (!bin) throw new Error("no nats-server");
    const dir = await mkdtemp(join(tmpdir(), "vqs-nemesis-flow-"));
    const env = await startEnvironment({ bin, dir });
    let clean = false;
    try {
      const seed = Number(process.env.VQS_NEMESIS_SEED ?? 1);
      const r = await runFlowRound(env, {
        label: "flow",
        topic: `nemesis-flow-${seed}-${Date.now()}`,
        random: seededRandom(seed),
        drainMs: 60_000,
        steps: [
          { fault: killGateway(0, 5000), gapMs: 3000 },
          { fault: pauseGateway(1, 5000), gapMs: 3000 },
          { fault: killNode("leader", 5000), gapMs: 4000 },
          { fault: pauseNode("follower", 5000), gapMs: 3000 },
        ],
      });
      const a = [r.ordered.anomalies, r.rated.anomalies];
      clean = a.every((x) => Object.values(x).every((list) => list.length === 0));
      process.stdout.write(
        `nemesis flow-control scenario on nats-server ${env.nodes.version}, ${Math.round(r.durationMs / 1000)} s: ` +
          `${r.stored} stored; ordered ${JSON.stringify({ ...r.ordered, anomalies: undefined })} ${JSON.stringify(r.ordered.anomalies)}; ` +
          `rated ${JSON.stringify({ ...r.rated, anomalies: undefined })} ${JSON.stringify(r.rated.anomalies)}; ` +
          `not acknowledged after the drain ${JSON.stringify(r.missing)}\nhistory: ${r.historyPath}\n`,
      );
      expect(r.stored).toBeGreaterThan(200);
      expect(r.ordered.keys).toBe(20);
      expect(r.rated.keys).toBe(20);
      for (const [name, report] of [
        ["ordered", r.ordered],
        ["rated", r.rated],
      ] as const) {
        expect(report.anomalies.order, `${name}: per-key order`).toEqual([]);
        expect(report.anomalies.concurrency, `${name}: per-key concurrency`).toEqual([]);
        expect(report.anomalies.rate, `${name}: per-key rate`).toEqual([]);
        expect(report.anomalies.lost, `${name}: stored, never delivered`).toEqual([]);
      }
    } finally {
      await env.dispose();
      if (clean) await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

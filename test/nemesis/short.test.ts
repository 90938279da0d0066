// The nemesis's short schedule, in CI: each fault once (a node SIGKILLed and restarted; the
// stream leader, then a follower, SIGSTOPped 8 s each; a gateway SIGSTOPped; the leader cut off
// from every host, then a 1-2 split with a gateway on each side; a gateway's clock stepped 5
// minutes; every node's disk full) under keyed, plain, delayed and large (1.5-3 MB) publishes,
// acknowledging consumers and a pushed group on a 3-node R3 cluster, then a drain and a fresh
// group reading the whole topic. The checker must find nothing lost, phantom, resurrected,
// duplicated, hung or corrupt (a body whose SHA-256 is not the published one's) in any group. Runs on the current
// nats-server only (vitest.config.ts); `npm run soak` runs long randomised schedules.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { natsServerBinary } from "../../src/dev/nats-server-process.js";
import { startEnvironment } from "./lab/environment.js";
import { missingPrerequisites } from "./lab/prerequisites.js";
import { runRound } from "./round.js";
import { seededRandom, shortSchedule } from "./schedules.js";
import { anomalyTable, details, pushedTable } from "./check/table.js";
import { PUSH_GROUP } from "./workload.js";

const missing = missingPrerequisites();
if (missing.length > 0) {
  process.stdout.write(`nemesis short schedule SKIPPED, missing: ${missing.join("; ")}\n`);
}

describe.skipIf(missing.length > 0)("the nemesis's short schedule", () => {
  it("loses, invents, resurrects, duplicates and hangs nothing under every fault once", async () => {
    const bin = natsServerBinary();
    if (!bin) throw new Error("no nats-server");
    const dir = await mkdtemp(join(tmpdir(), "vqs-nemesis-"));
    const env = await startEnvironment({ bin, dir });
    let clean = false;
    try {
      const seed = Number(process.env.VQS_NEMESIS_SEED ?? 1);
      const r = await runRound(env, {
        label: "short",
        topic: `nemesis-${seed}-${Date.now()}`,
        schedule: shortSchedule(),
        seed,
        random: seededRandom(seed),
        drainMs: 90_000,
      });
      const a = r.report.anomalies;
      clean = Object.values(a).every((list) => list.length === 0);
      process.stdout.write(
        `nemesis short schedule on nats-server ${env.nodes.version}, ${Math.round(r.durationMs / 1000)} s\n` +
          `${anomalyTable([{ label: r.label, report: r.report }])}\n` +
          `${pushedTable([{ label: r.label, report: r.report }], PUSH_GROUP)}\n${details(r.report)}\n` +
          r.faultInfo.map((e) => `${e.fault} ${e.phase}: ${JSON.stringify(e.info)}`).join("\n") +
          `\nhistory: ${r.historyPath}${clean ? " (removed: clean run)" : " (kept)"}\n`,
      );
      expect(r.report.acknowledgedPublishes).toBeGreaterThan(200);
      expect(r.report.pushes[PUSH_GROUP]?.received, "pushes to the pushed group").toBeGreaterThan(
        200,
      );
      expect(r.report.largeBodies.published, "large bodies published").toBeGreaterThan(0);
      expect(r.report.largeBodies.delivered, "large bodies delivered").toBeGreaterThan(0);
      expect(a.lost, "acknowledged publishes never delivered").toEqual([]);
      expect(a.phantom, "deliveries nobody published").toEqual([]);
      expect(a.resurrected, "deliveries after an acknowledgement").toEqual([]);
      expect(a.duplicate, "idempotency keys stored twice").toEqual([]);
      expect(a.hung, "requests past their bound").toEqual([]);
      expect(a.corrupt, "bodies delivered other than published (SHA-256)").toEqual([]);
    } finally {
      await env.dispose();
      if (clean) await rm(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

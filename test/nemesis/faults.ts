// The faults the nemesis applies, each healed before it returns, each written to the history
// (start, end, and what was measured: who led the stream before and during, what a skewed gateway
// answered, how long the store took to recover). Nodes are named n0..n2, gateways g0, g1.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { RecordingClient } from "./client.js";
import type { NemesisEnvironment } from "./lab/environment.js";
import type { HistoryWriter } from "./check/history.js";
import { NODE_HOSTS } from "./lab/nodes.js";
import { eventually } from "../helpers/wait.js";

export interface FaultContext {
  readonly env: NemesisEnvironment;
  readonly history: HistoryWriter;
  readonly client: RecordingClient;
  /** The workload topic's stream (whose leader the faults aim at). */
  readonly stream: string;
  readonly random: () => number;
  /** Tells the workload about a message the nemesis published (the drain waits for it too). */
  readonly noteStored: (body: string) => void;
}

export interface Fault {
  readonly name: string;
  run(ctx: FaultContext): Promise<void>;
}

export type NodeTarget = "leader" | "follower" | number;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nodeName = (i: number) => NODE_HOSTS[i]!;
const others = (i: number) => [0, 1, 2].filter((j) => j !== i);

async function pickNode(ctx: FaultContext, target: NodeTarget): Promise<number> {
  if (typeof target === "number") return target;
  const leader = await ctx.env.nodes.streamLeader(ctx.stream);
  if (leader === null) return Math.floor(ctx.random() * 3);
  if (target === "leader") return leader;
  const followers = others(leader);
  return followers[Math.floor(ctx.random() * followers.length)]!;
}

/** A leader lookup through the given nodes only, `afterMs` from now (during the fault). */
function leaderLater(ctx: FaultContext, via: number[], afterMs: number) {
  return sleep(Math.max(0, afterMs)).then(() => ctx.env.nodes.streamLeader(ctx.stream, via));
}

const name = (i: number | null) => (i === null ? null : nodeName(i));

/** SIGKILL of a node, down for `downMs`, then restarted on the same store. */
export function killNode(target: NodeTarget, downMs: number): Fault {
  return {
    name: `kill-node(${target}, ${downMs} ms)`,
    async run(ctx) {
      const i = await pickNode(ctx, target);
      const targets = [nodeName(i)];
      ctx.history.write({ type: "nemesis", fault: "kill-node", phase: "start", targets });
      await ctx.env.nodes.kill(i);
      const during = leaderLater(ctx, others(i), downMs - 1000);
      await sleep(downMs);
      await ctx.env.nodes.restart(i);
      ctx.history.write({
        type: "nemesis",
        fault: "kill-node",
        phase: "end",
        targets,
        info: { leaderWhileDown: name(await during) },
      });
    },
  };
}

/**
 * test/faults/cluster-faults.test.ts's schedule: the stream leader, then the other two nodes in
 * turn, each SIGKILLed, down for `downMs`, restarted, and given `upMs` before the next.
 */
export function killEachNode(downMs: number, upMs: number): Fault {
  return {
    name: `kill-each-node(${downMs} ms down, ${upMs} ms up)`,
    async run(ctx) {
      const leader = await pickNode(ctx, "leader");
      for (const i of [leader, ...others(leader)]) {
        const targets = [nodeName(i)];
        ctx.history.write({ type: "nemesis", fault: "kill-node", phase: "start", targets });
        await ctx.env.nodes.kill(i);
        await sleep(downMs);
        await ctx.env.nodes.restart(i);
        ctx.history.write({ type: "nemesis", fault: "kill-node", phase: "end", targets });
        await sleep(upMs);
      }
    },
  };
}

/** SIGSTOP of a node for `ms` (longer than an election timeout), then SIGCONT. */
export function pauseNode(target: NodeTarget, ms: number): Fault {
  return {
    name: `pause-node(${target}, ${ms} ms)`,
    async run(ctx) {
      const before = await ctx.env.nodes.streamLeader(ctx.stream);
      const i = await pickNode(ctx, target);
      const targets = [nodeName(i)];
      ctx.history.write({
        type: "nemesis",
        fault: "pause-node",
        phase: "start",
        targets,
        info: { target, leaderBefore: name(before) },
      });
      ctx.env.nodes.pause(i);
      const during = leaderLater(ctx, others(i), ms - 3000);
      await sleep(ms);
      ctx.env.nodes.resume(i);
      const leaderDuring = name(await during);
      ctx.history.write({
        type: "nemesis",
        fault: "pause-node",
        phase: "end",
        targets,
        info: { leaderDuring, leaderAfter: name(await ctx.env.nodes.streamLeader(ctx.stream)) },
      });
    },
  };
}

/** SIGSTOP of a gateway for `ms`, then SIGCONT: its clients' requests hang meanwhile. */
export function pauseGateway(g: number, ms: number): Fault {
  return {
    name: `pause-gateway(g${g}, ${ms} ms)`,
    async run(ctx) {
      const targets = [`g${g}`];
      ctx.history.write({ type: "nemesis", fault: "pause-gateway", phase: "start", targets });
      ctx.env.gateways[g]!.pause();
      await sleep(ms);
      ctx.env.gateways[g]!.resume();
      ctx.history.write({ type: "nemesis", fault: "pause-gateway", phase: "end", targets });
    },
  };
}

/**
 * A network partition for `ms`: "isolate" cuts one node off from every other host (nodes and
 * gateways); "split" cuts the cluster 1–2 with a gateway on each side, so the minority node keeps
 * a client. Records who led the stream before, as seen from the majority during, and from the
 * cut-off node alone (its view should be that there is no leader it can reach).
 */
export function partition(kind: "isolate" | "split", target: NodeTarget, ms: number): Fault {
  return {
    name: `${kind}(${target}, ${ms} ms)`,
    async run(ctx) {
      const before = await ctx.env.nodes.streamLeader(ctx.stream);
      const i = await pickNode(ctx, target);
      const majority = others(i).map(nodeName);
      const blocks =
        kind === "isolate"
          ? [[nodeName(i)], [...majority, "g0", "g1"]]
          : [
              [nodeName(i), "g0"],
              [...majority, "g1"],
            ];
      const fault = kind === "isolate" ? "isolate-node" : "split";
      const targets = [nodeName(i)];
      await ctx.env.lab.partition(blocks);
      ctx.history.write({
        type: "nemesis",
        fault,
        phase: "start",
        targets,
        info: { blocks, leaderBefore: name(before) },
      });
      const during = leaderLater(ctx, others(i), ms - 3000);
      const minorityView = leaderLater(ctx, [i], ms - 3000);
      await sleep(ms);
      const [majorityLeader, minorityLeader] = await Promise.all([during, minorityView]);
      await ctx.env.lab.heal();
      ctx.history.write({
        type: "nemesis",
        fault,
        phase: "end",
        targets,
        info: { leaderDuring: name(majorityLeader), cutOffNodeSaw: name(minorityLeader) },
      });
    },
  };
}

/**
 * A gateway's wall clock stepped by `offsetMs` for `ms`, then stepped back. Probes what the
 * skewed gateway (and the other) answer to a token that expires in 2 minutes.
 */
export function skewGateway(g: number, offsetMs: number, ms: number): Fault {
  return {
    name: `skew-gateway(g${g}, ${offsetMs / 60_000} min, ${ms} ms)`,
    async run(ctx) {
      const gw = ctx.env.gateways[g]!;
      const targets = [`g${g}`];
      if (!gw.skewable) {
        ctx.history.write({
          type: "nemesis",
          fault: "skew-gateway",
          phase: "info",
          targets,
          info: { skipped: "libfaketime is not installed (apt-get install faketime)" },
        });
        return;
      }
      await gw.skew(offsetMs);
      ctx.history.write({
        type: "nemesis",
        fault: "skew-gateway",
        phase: "start",
        targets,
        info: { offsetMs },
      });
      // libfaketime reads the offset file at most once a second: wait until the gateway's own
      // HTTP Date header shows the step.
      const seenAfterMs = await clockStepSeen(gw.url, offsetMs);
      const shortToken = await ctx.env.issuer.token({}, { expiresIn: "2m" });
      const probe = async (url: string) => {
        const res = await fetch(`${url}/api/v3/topic/nemesis-probe`, {
          method: "POST",
          headers: { authorization: `Bearer ${shortToken}` },
          body: "probe",
          signal: AbortSignal.timeout(10_000),
        }).catch(() => null);
        return res ? `${res.status} ${(await res.text()).slice(0, 80)}` : "no answer";
      };
      const skewed = await probe(gw.url);
      const other = await probe(ctx.env.gateways[(g + 1) % ctx.env.gateways.length]!.url);
      ctx.history.write({
        type: "nemesis",
        fault: "skew-gateway",
        phase: "info",
        targets,
        info: {
          clockStepSeenAfterMs: seenAfterMs,
          tokenExpiringIn2Min: { skewedGateway: skewed, otherGateway: other },
        },
      });
      await sleep(Math.max(0, ms - (seenAfterMs ?? 5000)));
      await gw.skew(0);
      ctx.history.write({ type: "nemesis", fault: "skew-gateway", phase: "end", targets });
    },
  };
}

/**
 * Every node's store filled to the last byte for `ms`, then the space given back. Publishes meanwhile
 * must answer 503, never 201. Afterwards, probes (recorded publishes to the workload topic) until
 * one is stored; if none is within `recoverMs`, the nodes are restarted one by one (some servers
 * keep a store's write error until then) and that is recorded.
 */
export function diskFull(ms: number, recoverMs = 30_000): Fault {
  return {
    name: `disk-full(${ms} ms)`,
    async run(ctx) {
      const targets = [...NODE_HOSTS];
      const logSizes = await Promise.all(NODE_HOSTS.map((h) => logLength(ctx, h)));
      const filled = await Promise.all(ctx.env.nodes.disks.map((d) => d.fill()));
      // The window starts once no byte is left: publishes in it must not be answered 201.
      ctx.history.write({
        type: "nemesis",
        fault: "disk-full",
        phase: "start",
        targets,
        info: { filledBytes: filled },
      });
      await sleep(ms);
      await Promise.all(ctx.env.nodes.disks.map((d) => d.free()));
      ctx.history.write({ type: "nemesis", fault: "disk-full", phase: "end", targets });
      ctx.history.write({ type: "nemesis", fault: "disk-recovery", phase: "start", targets });
      const freedAt = Date.now();
      let n = 0;
      // Probes go to the workload's own topic: its stream is the one that hit the full disk.
      const recovered = async (within: number) => {
        const stored = async () => {
          const body = `probe-${Math.round(ctx.history.now())}`;
          const r = await ctx.client.publish("nemesis", n++ % 2, null, body, 0);
          if (r.status === 201) ctx.noteStored(body);
          return r.status === 201;
        };
        return eventually(stored, within, 1000);
      };
      let restartedNodes = false;
      let ok = await recovered(recoverMs);
      const withoutRestart = ok ? Date.now() - freedAt : null;
      if (!ok) {
        restartedNodes = true;
        for (let i = 0; i < 3; i++) {
          await ctx.env.nodes.kill(i);
          await ctx.env.nodes.restart(i);
          await sleep(2000);
        }
        ok = await recovered(recoverMs);
      }
      const logs = await Promise.all(NODE_HOSTS.map((h, i) => logSince(ctx, h, logSizes[i]!)));
      ctx.history.write({
        type: "nemesis",
        fault: "disk-recovery",
        phase: "end",
        targets,
        info: {
          recovered: ok,
          recoveredWithoutRestartAfterMs: withoutRestart,
          restartedNodes,
          recoveredAfterMs: ok ? Date.now() - freedAt : null,
          serverLog: logs.flat(),
        },
      });
    },
  };
}

/** How long until the gateway's Date header is `offsetMs` off (within 3 s); null: never in 10 s. */
async function clockStepSeen(url: string, offsetMs: number): Promise<number | null> {
  const start = Date.now();
  const stepped = async () => {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(
      () => null,
    );
    const date = Date.parse(res?.headers.get("date") ?? "");
    await res?.text();
    return Math.abs(date - Date.now() - offsetMs) < 3000;
  };
  return (await eventually(stepped, 10_000, 250)) ? Date.now() - start : null;
}

const logFile = (ctx: FaultContext, host: string) => join(ctx.env.dir, host, "nats-server.log");

async function logLength(ctx: FaultContext, host: string): Promise<number> {
  return (await readFile(logFile(ctx, host)).catch(() => Buffer.alloc(0))).length;
}

/** The node's log lines since `offset` that speak of storage trouble. */
async function logSince(ctx: FaultContext, host: string, offset: number): Promise<string[]> {
  const text = (await readFile(logFile(ctx, host)).catch(() => Buffer.alloc(0)))
    .subarray(offset)
    .toString();
  return text
    .split("\n")
    .filter((l) => /space|resource|disabl|write err|insufficient|storage/i.test(l))
    .slice(0, 4)
    .map((l) => `${host}: ${l.slice(0, 200)}`);
}

/** SIGKILL of a gateway, down for `downMs`, then started again: its leases end by expiry. */
export function killGateway(g: number, downMs: number): Fault {
  return {
    name: `kill-gateway(g${g}, ${downMs} ms)`,
    async run(ctx) {
      const targets = [`g${g}`];
      ctx.history.write({ type: "nemesis", fault: "kill-gateway", phase: "start", targets });
      await ctx.env.gateways[g]!.kill();
      await sleep(downMs);
      await ctx.env.gateways[g]!.restart();
      ctx.history.write({ type: "nemesis", fault: "kill-gateway", phase: "end", targets });
    },
  };
}

// Smallest reproduction of the nemesis's "lost and duplicated at once" finding, on nats-server alone
// (no gateway): a 3-node cluster and an R3 stream under a steady publisher; the stream leader is
// SIGSTOPped for 8 s, then the leader that replaced it for 8 s. Afterwards every acknowledged
// publish (PubAck seq -> payload) is compared with what each node's replica holds at that
// sequence (Direct Get through a connection to that node alone, which its local replica answers).
// Run: `npx tsx test/nemesis/repro/replicas-diverge.ts [nats-server] [tries]`.
// Measured 2026-11-23 on the loaded 2-core machine: nats-server 2.9.10 in 8 of 12 tries (4 to 204
// acknowledged sequences per node held another message, the nodes disagreeing among themselves;
// where counted, mostly a publish that got no PubAck, else another acknowledged body, and the
// acknowledged body not within 3 sequences; no PubAck named a sequence twice); 2.15.1 with
// sync_interval always in 0 of 3. In the soak (issue #16's pause schedule, 2.9.10) the same thing
// showed as "lost" bodies delivered under another sequence's message ID and "duplicate" keys.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { natsServerVersion } from "../../../src/dev/nats-server-process.js";
import { startTestCluster, type TestCluster } from "../../helpers/cluster.js";
import { versionAtLeast } from "../lab/nodes.js";

const bin = process.argv[2] ?? ".cache/nats-current/nats-server";
const tries = Number(process.argv[3] ?? 5);
const version = natsServerVersion(bin);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leaderOf(cluster: TestCluster, stream: string): Promise<number> {
  for (let i = 0; i < 60; i++) {
    const l = await cluster.streamLeader(stream).catch(() => null);
    if (l !== null) return l;
    await sleep(250);
  }
  throw new Error("no stream leader");
}

async function tryOnce(cluster: TestCluster, nc: NatsConnection, t: number): Promise<string> {
  const stream = `DIV${t}`;
  const jsm: JetStreamManager = await jetstreamManager(nc);
  await jsm.streams.add({
    name: stream,
    subjects: [`div${t}`],
    num_replicas: 3,
    allow_direct: true,
  });
  const js = jetstream(nc, { timeout: 2000 });
  const acked = new Map<number, string>();
  let reused = 0;
  let publishing = true;
  const publisher = async (p: number) => {
    for (let n = 0; publishing; n++) {
      const body = `p${p}-${n}`;
      const ack = await js.publish(`div${t}`, body).catch(() => null);
      if (!ack) continue;
      if (acked.has(ack.seq)) reused++; // two PubAcks, two messages, one sequence
      acked.set(ack.seq, body);
    }
  };
  const publishers = Array.from({ length: 8 }, (_, p) => publisher(p));
  await sleep(3000);
  const first = await leaderOf(cluster, stream);
  cluster.nodes[first]!.pause();
  await sleep(8000);
  cluster.nodes[first]!.resume();
  await sleep(2000);
  const second = await leaderOf(cluster, stream);
  cluster.nodes[second]!.pause();
  await sleep(8000);
  cluster.nodes[second]!.resume();
  await sleep(3000);
  publishing = false;
  await Promise.all(publishers);
  await sleep(5000); // let the replicas catch up
  const problems: string[] = [];
  for (const [i, node] of cluster.nodes.entries()) {
    const one = await connect({ servers: node.url });
    const m1 = await jetstreamManager(one);
    let wrong = 0;
    let missing = 0;
    let nearby = 0; // the acknowledged body stored within 3 sequences of its PubAck's
    let unacked = 0; // what the PubAck's sequence holds is a publish that got no PubAck
    const bodies = new Set(acked.values());
    for (const [seq, body] of acked) {
      const m = await m1.direct.getMessage(stream, { seq }).catch(() => null);
      if (!m) missing++;
      else if (m.string() !== body) {
        wrong++;
        if (!bodies.has(m.string())) unacked++;
        for (let d = -3; d <= 3; d++) {
          const n = d && (await m1.direct.getMessage(stream, { seq: seq + d }).catch(() => null));
          if (n && n.string() === body) {
            nearby++;
            break;
          }
        }
      }
    }
    await one.close();
    if (wrong || missing)
      problems.push(
        `n${i}: ${wrong} acked seqs hold another message (${unacked} of them a publish that got ` +
          `no PubAck; ${nearby} acked bodies stored within 3 seqs instead), ${missing} missing`,
      );
  }
  if (reused)
    problems.push(`${reused} PubAcks named a sequence already acknowledged for another message`);
  return `leaders paused n${first} then n${second}; ${acked.size} acked; ${problems.join("; ") || "every replica agrees with every PubAck"}`;
}

const cluster = await startTestCluster({ bin, syncAlways: versionAtLeast(version, 2, 10) });
let nc: NatsConnection | null = null;
let diverged = 0;
try {
  nc = await connect({ servers: cluster.url.split(","), maxReconnectAttempts: -1 });
  for (let i = 0; i < 60; i++) {
    try {
      await (
        await jetstreamManager(nc)
      ).streams.add({ name: "WARM", subjects: ["warm"], num_replicas: 3 });
      break;
    } catch {
      await sleep(500); // the new cluster elects its meta leader first
    }
  }
  for (let t = 0; t < tries; t++) {
    const result = await tryOnce(cluster, nc, t);
    if (!result.endsWith("every PubAck")) diverged++;
    process.stdout.write(`try ${t + 1}: ${result}\n`);
  }
} finally {
  for (const n of cluster.nodes) n.resume();
  await nc?.close();
  await cluster.dispose();
}
process.stdout.write(
  `nats-server ${version}: replicas disagreed with acknowledged publishes in ${diverged} of ${tries} tries\n`,
);

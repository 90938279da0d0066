// Smallest reproduction of the nemesis's "resurrected" finding, on nats-server alone (no gateway):
// a 3-node cluster, an R3 stream and R3 durable pull consumer; one message pulled and acknowledged
// with a request (+ACK, whose reply the gateway takes as "acknowledged"), then the consumer's leader
// SIGKILLed the moment the reply arrives. After the failover, is the acknowledged message
// delivered again? Run: `npx tsx test/nemesis/repro/acked-then-redelivered.ts [nats-server] [tries]`.
// Measured 2026-11-23 on the loaded 2-core machine: nats-server 2.9.10 delivered 2 of 10 such
// messages again (deliveryCount 2); 2.15.1 with sync_interval always 0 of 10.
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { natsServerVersion } from "../../../src/dev/nats-server-process.js";
import { startTestCluster } from "../../helpers/cluster.js";
import { versionAtLeast } from "../lab/nodes.js";

const bin = process.argv[2] ?? ".cache/nats-current/nats-server";
const tries = Number(process.argv[3] ?? 10);
const version = natsServerVersion(bin);
const STREAM = "ACKREPRO";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function consumerLeader(jsm: JetStreamManager): Promise<number | null> {
  try {
    const leader = (await jsm.consumers.info(STREAM, "c")).cluster?.leader ?? "";
    const m = /^n(\d)$/.exec(leader);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

const cluster = await startTestCluster({ bin, syncAlways: versionAtLeast(version, 2, 10) });
let nc: NatsConnection | null = null;
let redelivered = 0;
let done = 0;
try {
  nc = await connect({ servers: cluster.url.split(","), maxReconnectAttempts: -1 });
  let jsm: JetStreamManager | null = null;
  for (let i = 0; i < 60 && !jsm; i++) {
    try {
      // The new cluster elects its meta leader first (jetstreamManager asks for account info).
      const m = await jetstreamManager(nc);
      await m.streams.add({ name: STREAM, subjects: ["ackrepro"], num_replicas: 3 });
      jsm = m;
    } catch {
      await sleep(500);
    }
  }
  if (!jsm) throw new Error("no JetStream meta leader within 30 s");
  await jsm.consumers.add(STREAM, {
    durable_name: "c",
    ack_policy: AckPolicy.Explicit,
    ack_wait: 2_000_000_000,
  });
  const js = jetstream(nc);
  for (let t = 0; t < tries; t++) {
    await js.publish("ackrepro", `m${t}`);
    const consumer = await js.consumers.get(STREAM, "c");
    const m = await consumer.next({ expires: 5000 });
    if (!m) continue;
    const leader = await consumerLeader(jsm);
    if (leader === null) continue;
    if (!(await m.ackAck({ timeout: 2000 }))) continue; // a request "+ACK", as the gateway sends
    await cluster.kill(leader); // right after the reply: "acknowledged"
    await sleep(1000);
    await cluster.restart(leader);
    for (let i = 0; i < 40; i++) {
      const m = await jetstreamManager(nc).catch(() => null);
      if (m) {
        jsm = m;
        break;
      }
      await sleep(250);
    }
    // A new leader, then the ack wait: an unreplicated ack makes the message pending again.
    for (let i = 0; i < 40 && (await consumerLeader(jsm)) === null; i++) await sleep(250);
    const again = await (
      await js.consumers.get(STREAM, "c")
    )
      .next({ expires: 6000 })
      .catch(() => null);
    done++;
    if (again?.string() === `m${t}`) {
      redelivered++;
      await again.ackAck().catch(() => false);
    }
    process.stdout.write(
      `try ${t + 1}: ${again ? `got ${again.string()} (delivery ${again.info.deliveryCount})` : "nothing"}\n`,
    );
  }
} finally {
  await nc?.close();
  await cluster.dispose();
}
process.stdout.write(
  `nats-server ${version}: ${redelivered} of ${done} messages acknowledged (+ACK reply received) ` +
    "were delivered again after their consumer leader was killed\n",
);

// The storage, records, settings and management contracts on JetStream: a gateway's
// JetStreamBroker, JetStreamRecords, SettingsBucket and JetStreamAdmin on a real nats-server, time
// passing for real (a 1 s ack wait keeps the lease tests short; the TTL case has a bucket of its
// own whose records live a second).
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { FLOW_SLOTS_BUCKET } from "../../src/nats/queue-state/records/flow-slots.js";
import { JetStreamRecords } from "../../src/nats/queue-state/records/jetstream-records.js";
import { LeaseRecords } from "../../src/nats/queue-state/records/lease-records.js";
import { useGateways } from "../helpers/fixture.js";
import { sleep } from "../helpers/http.js";
import { brokerContract } from "./broker-contract.js";
import { flowSlotsContract } from "./flow-slots-contract.js";
import { queueAdminContract } from "./queue-admin-contract.js";
import { ledgersContract } from "./ledgers-contract.js";
import { recordsContract } from "./records-contract.js";
import { settingsContract } from "./settings-contract.js";

const fixture = useGateways(1, { config: { consumerAckWaitSeconds: 1 } });
/** Time passes for real here. */
const advance = async (ms: number) => {
  await sleep(ms);
};

brokerContract("JetStream", {
  broker: () => fixture.gateways[0]!.gateway.jetstream.broker,
  advance,
  patience: 20,
});

let nc: NatsConnection | undefined;
let shortLived: JetStreamRecords;
beforeAll(async () => {
  nc = await connect({ servers: fixture.nats.url });
  const bucket = new LeaseRecords(jetstream(nc), {
    replicas: 1,
    ttlMs: 1000,
    timeoutMs: 5000,
    name: "VQS_CONTRACT_RECORDS",
  });
  shortLived = new JetStreamRecords({ bucket, region: "iad1", ttlMs: 1000, observe: () => {} });
});
afterAll(async () => {
  await nc?.close();
});

recordsContract("JetStream KV", {
  records: () => fixture.gateways[0]!.gateway.jetstream.records,
  shortLived: () => shortLived,
  advance,
  patience: 20,
});

ledgersContract("JetStream KV", {
  records: () => fixture.gateways[0]!.gateway.jetstream.records,
  cuts: () => fixture.gateways[0]!.gateway.jetstream.cuts,
  now: () => fixture.gateways[0]!.gateway.jetstream.now(),
});

// The bucket's max age (hours) is not waited for here: the bucket is checked to have it, and the
// twin's case checks the rule.
flowSlotsContract("JetStream KV", {
  ledger: () => fixture.gateways[0]!.gateway.jetstream.flowSlots,
  forgetting: {
    keptMs: async () => {
      const info = await (await jetstreamManager(nc!)).streams.info(`KV_${FLOW_SLOTS_BUCKET}`);
      return info.config.max_age / 1e6;
    },
  },
});

settingsContract("JetStream KV", () => fixture.gateways[0]!.gateway.jetstream.settings);

queueAdminContract("JetStream", {
  broker: () => fixture.gateways[0]!.gateway.jetstream.broker,
  records: () => fixture.gateways[0]!.gateway.jetstream.records,
  outcomes: () => fixture.gateways[0]!.gateway.jetstream.pushHealth,
  admin: () => fixture.gateways[0]!.gateway.jetstream.admin,
  now: () => Date.now(),
  advance,
  settle: () => fixture.gateways[0]!.gateway.jetstream.pushHealth.flush(),
});

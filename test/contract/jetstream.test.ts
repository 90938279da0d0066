// The storage, settings and management contracts on JetStream: a gateway's JetStreamBroker,
// SettingsBucket and JetStreamAdmin on a real nats-server, time passing for real (a 1 s ack wait
// keeps the lease tests short).
import { useGateways } from "../helpers/fixture.js";
import { sleep } from "../helpers/http.js";
import { brokerContract } from "./broker-contract.js";
import { flowSlotsContract } from "./flow-slots-contract.js";
import { queueAdminContract } from "./queue-admin-contract.js";
import { settingsContract } from "./settings-contract.js";

const fixture = useGateways(1, { config: { consumerAckWaitSeconds: 1 } });

brokerContract("JetStream", {
  broker: () => fixture.gateways[0]!.gateway.jetstream.broker,
  advance: async (ms) => {
    await sleep(ms);
  },
  patience: 20,
});

// The bucket's max age (hours) is not waited for here: the twin's case checks the rule.
flowSlotsContract("JetStream KV", { ledger: () => fixture.gateways[0]!.gateway.jetstream.broker });

settingsContract("JetStream KV", () => fixture.gateways[0]!.gateway.jetstream.settings);

queueAdminContract("JetStream", {
  broker: () => fixture.gateways[0]!.gateway.jetstream.broker,
  admin: () => fixture.gateways[0]!.gateway.jetstream.admin,
  now: () => Date.now(),
  advance: async (ms) => {
    await sleep(ms);
  },
  settle: () => fixture.gateways[0]!.gateway.jetstream.pushHealth.flush(),
});

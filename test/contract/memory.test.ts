// The storage, records, settings, management, large-body and failover contracts on the in-memory
// implementations, their clock moved by the suite.
import { beforeEach } from "vitest";
import { MemoryBodyStore } from "../../src/memory/memory-body-store.js";
import { MemoryDeferrer } from "../../src/memory/memory-deferrer.js";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import { MemoryRecords } from "../../src/memory/memory-records.js";
import { MemoryQueueAdmin } from "../../src/memory/memory-queue-admin.js";
import { MemorySettingsStore } from "../../src/memory/memory-settings-store.js";
import { bodyStoreContract } from "./body-store-contract.js";
import { brokerContract } from "./broker-contract.js";
import { deferrerContract } from "./deferrer-contract.js";
import { flowSlotsContract } from "./flow-slots-contract.js";
import { queueAdminContract } from "./queue-admin-contract.js";
import { ledgersContract } from "./ledgers-contract.js";
import { recordsContract } from "./records-contract.js";
import { settingsContract } from "./settings-contract.js";

let clock = Date.parse("2026-01-05T10:00:00Z");
let broker: MemoryBroker;
let admin: MemoryQueueAdmin;
let deferrer: MemoryDeferrer;
beforeEach(() => {
  broker = new MemoryBroker({ now: () => clock, defaultLeaseMs: 1000, dedupWindowMs: 120_000 });
  admin = new MemoryQueueAdmin({ broker, now: () => clock });
  deferrer = new MemoryDeferrer({ home: broker, now: () => clock });
});
const advance = (ms: number) => {
  clock += ms;
  broker.pump();
  return Promise.resolve();
};

brokerContract("in memory", {
  broker: () => broker,
  advance,
  patience: 10,
});

recordsContract("in memory", {
  records: () => broker.records,
  shortLived: () => new MemoryRecords({ now: () => clock, ttlMs: 1000 }),
  advance,
  patience: 4,
});

ledgersContract("in memory", {
  records: () => broker.records,
  cuts: () => broker.cuts,
  now: () => clock,
});

queueAdminContract("in memory", {
  broker: () => broker,
  records: () => broker.records,
  outcomes: () => broker,
  admin: () => admin,
  now: () => clock,
  advance,
});

const settings = new MemorySettingsStore(() => clock);
settingsContract("in memory", () => settings);

// Small chunks: the multi-chunk cases stay a few kilobytes.
const bodies = new MemoryBodyStore({ now: () => clock, chunkBytes: 1024 });
bodyStoreContract("in memory", {
  store: () => bodies,
  chunkBytes: 1024,
  storedChunks: (topic) => Promise.resolve(bodies.storedChunks(topic)),
});

deferrerContract("in memory", {
  deferrer: () => deferrer,
  broker: () => broker,
  relocate: () => deferrer.relocate(),
  patience: 2,
  cutNeighbours: () => {
    deferrer.setReachable(false);
    return Promise.resolve();
  },
});

flowSlotsContract("in memory", { ledger: () => broker.flowSlots, forgetting: { advance } });

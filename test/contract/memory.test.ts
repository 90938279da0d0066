// The storage and settings contracts on the in-memory implementations, their clock moved by the
// suite.
import { beforeEach } from "vitest";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import { MemorySettingsStore } from "../../src/memory/memory-settings-store.js";
import { brokerContract } from "./broker-contract.js";
import { settingsContract } from "./settings-contract.js";

let clock = Date.parse("2026-01-05T10:00:00Z");
let broker: MemoryBroker;
beforeEach(() => {
  broker = new MemoryBroker({ now: () => clock, defaultLeaseMs: 1000, dedupWindowMs: 120_000 });
});

brokerContract("in memory", {
  broker: () => broker,
  advance: (ms) => {
    clock += ms;
    broker.pump();
    return Promise.resolve();
  },
  patience: 10,
});

const settings = new MemorySettingsStore(() => clock);
settingsContract("in memory", () => settings);

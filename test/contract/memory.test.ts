// The storage ports contract on the in-memory implementation, its clock moved by the suite.
import { beforeEach } from "vitest";
import { MemoryBroker } from "../../src/memory/memory-broker.js";
import { brokerContract } from "./broker-contract.js";

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

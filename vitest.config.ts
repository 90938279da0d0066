import { defineConfig } from "vitest/config";
import { LongFirstSequencer } from "./test/helpers/long-first-sequencer.js";

// The main lane runs every test on a current nats-server (Debian unstable's, fetched into .cache/
// by scripts/ensure-current-nats.mjs: what operators run; the official Helm chart ships 2.14+).
// The compatibility lanes run again, on the older servers the service supports, what touches the
// JetStream adapter: the storage, settings, management and failover contracts, one end-to-end
// file per operation (messages, the client, management, consumer settings, push, dead letters,
// long polling), and the files whose JetStream paths differ by server (key records and their
// timers, retention, idle clean-up, settings across a restart, purge under a lease, pushed
// consumers, held pushes renewed, the server's clock, outages and shutdown). They run on Debian
// bookworm's nats-server (2.9.10, the oldest, with the fault tests too) and on trixie's (2.10,
// fetched into .cache/ by scripts/ensure-nats-2.10.mjs). Left to the main lane: what is the
// gateway's own, held on the twins and the contracts (bad input, authentication and isolation,
// tenant caps, stale handles and the concurrency limit across gateways: the lease ledger and
// in-flight counts they rest on are contract cases), per-message TTL (needs 2.11; older servers
// free storage at max age, which ttl.test.ts covers), the 2,500-topic pages (the contract lists
// past JetStream's pages on every lane), the vqs tool (an HTTP client of the API tested here),
// the OpenAPI document, logs, dev mode (`npm start` embeds the current server), and scale.
const CURRENT_NATS = process.env.NATS_SERVER_CURRENT_BIN ?? ".cache/nats-current/nats-server";
const COMPAT_NATS = process.env.NATS_SERVER_COMPAT_BIN ?? "nats-server";
const NATS_210 = process.env.NATS_SERVER_210_BIN ?? ".cache/nats-2.10/nats-server";
const FEATURE_TESTS = [
  "test/contract/jetstream.test.ts",
  "test/contract/jetstream-deferrer.test.ts",
  ...["api", "client", "dedup", "server-clock", "ttl"].map(
    (name) => `test/integration/messages/${name}.test.ts`,
  ),
  ...["hygiene", "namespace-caps", "shutdown", "storage-outage"].map(
    (name) => `test/integration/service/${name}.test.ts`,
  ),
  ...["management", "purge-leased"].map((name) => `test/integration/management/${name}.test.ts`),
  ...[
    "consumer-settings",
    "consumer-settings-restart",
    "cursor-fallback",
    "dead-letters",
    "flow-control",
    "long-polling",
    "push",
    "push-consumer-creation",
    "push-flow-control",
  ].map((name) => `test/integration/consumers/${name}.test.ts`),
];
// The quick lane (`npm run test:quick`): what needs no nats-server, helm or promtool, so no
// global setup either; the server lanes' files start their own nats-server.
const QUICK_TESTS = ["test/unit/**/*.test.ts", "test/contract/memory.test.ts"];
const SERVER_SETUP = ["test/helpers/global-setup.ts"];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    // Three files at once on the 2-core machine: most tests wait on leases, timers and child
    // processes, and with two the cores were idle 40 % of the suite (measured: 1262 s with 2,
    // 1085 s with 3). The longest files start first (test/helpers/long-first-sequencer.ts).
    maxWorkers: 3,
    sequence: { sequencer: LongFirstSequencer },
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: { name: "quick", include: QUICK_TESTS },
      },
      {
        extends: true,
        test: {
          name: "nats-current",
          include: ["test/**/*.test.ts"],
          // The flow-control nemesis runs in `npm run test:nemesis` only: some schedules still
          // find an ordered key's later message handed out before an earlier one, or two leases
          // of a key at once, under gateway kills and node pauses (docs/reliability.md).
          exclude: [
            "test/container/**",
            ...QUICK_TESTS,
            ...(process.env.VQS_NEMESIS_FLOW ? [] : ["test/nemesis/flow.test.ts"]),
          ],
          globalSetup: SERVER_SETUP,
          env: { NATS_SERVER_BIN: CURRENT_NATS },
        },
      },
      {
        extends: true,
        test: {
          name: "nats-compat",
          include: ["test/faults/**/*.test.ts", ...FEATURE_TESTS],
          globalSetup: SERVER_SETUP,
          env: { NATS_SERVER_BIN: COMPAT_NATS },
        },
      },
      {
        extends: true,
        test: {
          name: "nats-2.10",
          include: FEATURE_TESTS,
          globalSetup: SERVER_SETUP,
          env: { NATS_SERVER_BIN: NATS_210 },
        },
      },
      {
        // The container image, built and run (test/container/): a later group, so its CPU-heavy
        // build starts only when every other test has finished and disturbs no timing.
        extends: true,
        test: {
          name: "container",
          include: ["test/container/**/*.test.ts"],
          globalSetup: SERVER_SETUP,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

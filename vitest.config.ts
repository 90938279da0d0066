import { defineConfig } from "vitest/config";

// The main lane runs every test on a current nats-server (Debian unstable's, fetched into .cache/
// by scripts/ensure-current-nats.mjs: what operators run; the official Helm chart ships 2.14+).
// The compatibility lane runs the polling core and the fault tests again on the distribution's
// nats-server (Debian bookworm: 2.9.10, the oldest the service supports).
const CURRENT_NATS = process.env.NATS_SERVER_CURRENT_BIN ?? ".cache/nats-current/nats-server";
const COMPAT_NATS = process.env.NATS_SERVER_COMPAT_BIN ?? "nats-server";
const COMPAT_TESTS = [
  "test/faults/**/*.test.ts",
  "test/contract/jetstream.test.ts",
  ...["api", "client", "dedup", "stale-handles", "ttl"].map(
    (name) => `test/integration/messages/${name}.test.ts`,
  ),
  ...["auth-isolation", "hygiene", "shutdown", "storage-outage"].map(
    (name) => `test/integration/service/${name}.test.ts`,
  ),
];

export default defineConfig({
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "nats-current",
          include: ["test/**/*.test.ts"],
          exclude: ["test/container/**"],
          env: { NATS_SERVER_BIN: CURRENT_NATS },
        },
      },
      {
        extends: true,
        test: {
          name: "nats-compat",
          include: COMPAT_TESTS,
          env: { NATS_SERVER_BIN: COMPAT_NATS },
        },
      },
      {
        // The container image, built and run (test/container/): a later group, so its CPU-heavy
        // build starts only when every other test has finished and disturbs no timing.
        extends: true,
        test: {
          name: "container",
          include: ["test/container/**/*.test.ts"],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

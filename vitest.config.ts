import { defineConfig } from "vitest/config";

// Every integration and fault test runs twice: on the distribution's nats-server (Debian
// bookworm: 2.9.10, the oldest the service supports) and on a current one (Debian unstable's,
// fetched into .cache/ by scripts/ensure-current-nats.mjs; the official Helm chart ships 2.14+).
// The nemesis's short schedule (test/nemesis/short.test.ts, about 3-4 minutes) runs on the current
// server only; its checker's unit tests run once, in the first project.
const CURRENT_NATS = ".cache/nats-current/nats-server";

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
          name: "nats-distro",
          include: ["test/**/*.test.ts"],
          exclude: ["test/nemesis/short.test.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "nats-current",
          include: [
            "test/integration/**/*.test.ts",
            "test/faults/**/*.test.ts",
            "test/nemesis/short.test.ts",
          ],
          exclude: ["test/integration/message-ttl.test.ts", "test/integration/dev-mode.test.ts"],
          env: { NATS_SERVER_BIN: process.env.NATS_SERVER_CURRENT_BIN ?? CURRENT_NATS },
        },
      },
    ],
  },
});

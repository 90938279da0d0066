#!/usr/bin/env node
// The tests' 2.10 lane (vitest.config.ts) runs every feature's tests on nats-server 2.10, a
// supported version between the distribution's 2.9 and the current release. This fetches Debian
// trixie's package (2.10.x) without installing it into .cache/nats-2.10/ (lib/debian-nats.mjs).
// Skipped when NATS_SERVER_210_BIN names a binary, or when the cached one is there. Elsewhere it
// prints what to do; the lane then fails with the same message.
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { debianNatsServer } from "./lib/debian-nats.mjs";

const configured = process.env.NATS_SERVER_210_BIN;
if (configured && spawnSync(configured, ["--version"], { stdio: "ignore" }).status === 0) {
  process.exit(0);
}
debianNatsServer({
  suite: "trixie",
  cache: join(resolve(import.meta.dirname, ".."), ".cache", "nats-2.10"),
  label: "nats-server 2.10",
  hint: [
    "nats-server 2.10 is needed for the tests' 2.10 lane.",
    "  Debian/Ubuntu as root: npm run pretest (fetches Debian trixie's package into .cache/)",
    "  Otherwise: point NATS_SERVER_210_BIN at a nats-server 2.10 binary.",
  ].join("\n"),
});
process.exit(0); // npm test goes on; the 2.10 lane fails with the hint

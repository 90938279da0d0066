#!/usr/bin/env node
// The tests also run what needs a current nats-server (per-message TTL: 2.11+) against one, while
// the rest runs on the distribution's package (2.9.10 on Debian bookworm). This fetches Debian
// unstable's nats-server package without installing it and unpacks its binary into
// .cache/nats-current/ (lib/debian-nats.mjs). Skipped when NATS_SERVER_CURRENT_BIN names a
// binary, or when the cached one is there. Elsewhere it prints what to do; the tests that need it
// then fail with the same message.
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { debianNatsServer } from "./lib/debian-nats.mjs";

const configured = process.env.NATS_SERVER_CURRENT_BIN;
if (configured && spawnSync(configured, ["--version"], { stdio: "ignore" }).status === 0) {
  process.exit(0);
}
debianNatsServer({
  suite: "sid",
  cache: join(resolve(import.meta.dirname, ".."), ".cache", "nats-current"),
  label: "a current nats-server",
  hint: [
    "A current nats-server (2.11 or newer) is needed for the per-message TTL tests.",
    "  Debian/Ubuntu as root: npm run pretest (fetches Debian unstable's package into .cache/)",
    "  Otherwise: point NATS_SERVER_CURRENT_BIN at a nats-server >= 2.11 binary.",
  ].join("\n"),
});
process.exit(0); // npm test goes on; the tests that need it fail with the hint

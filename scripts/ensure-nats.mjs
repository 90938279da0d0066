#!/usr/bin/env node
// Makes sure nats-server is installed (npm start and npm test need a real one). As root on a
// Debian-like system it installs the OS package; otherwise it prints the command to run.
import { spawnSync } from "node:child_process";

const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
const bin = process.env.NATS_SERVER_BIN;
if ((bin && has(bin)) || has("nats-server") || has("/usr/sbin/nats-server")) process.exit(0);

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (root && has("apt-get", ["--version"])) {
  console.error(
    "nats-server is missing: installing the Debian package (apt-get install nats-server)...",
  );
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const install = spawnSync("apt-get", ["install", "-y", "-qq", "nats-server"], {
    stdio: "inherit",
    env,
  });
  if (
    update.status === 0 &&
    install.status === 0 &&
    (has("nats-server") || has("/usr/sbin/nats-server"))
  ) {
    process.exit(0);
  }
}
console.error(
  [
    "nats-server is required but not installed.",
    "  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y nats-server",
    "  macOS:         brew install nats-server",
    "  Other:         https://docs.nats.io/running-a-nats-service/introduction/installation",
    "Or point NATS_SERVER_BIN at a nats-server binary.",
  ].join("\n"),
);
process.exit(1);

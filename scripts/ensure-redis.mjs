#!/usr/bin/env node
// Makes sure `redis-server` is there for the BullMQ comparison of the benchmark
// (`npm run bench:bullmq`, bench/bullmq.ts). As root on a Debian-like system it installs
// Debian's redis-server package (waiting up to 10 minutes for another apt-get to finish);
// otherwise it fails with the command to run.
import { spawnSync } from "node:child_process";

const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
if (has("redis-server")) process.exit(0);

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (root && has("apt-get")) {
  console.error("redis-server missing: installing Debian's redis-server (apt-get)...");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const lock = ["-o", "DPkg::Lock::Timeout=600"];
  spawnSync("apt-get", [...lock, "update", "-qq"], { stdio: "inherit", env });
  const r = spawnSync("apt-get", [...lock, "install", "-y", "-qq", "redis-server"], {
    stdio: "inherit",
    env,
  });
  if (r.status === 0 && has("redis-server")) process.exit(0);
}
console.error(
  "The BullMQ comparison needs redis-server (and root to install it). " +
    "Debian/Ubuntu: sudo apt-get install -y redis-server",
);
process.exit(1);

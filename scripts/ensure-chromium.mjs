#!/usr/bin/env node
// Makes sure the web console's browser test has a browser: Debian's chromium (/usr/bin/chromium,
// or CHROMIUM_BIN), which playwright-core drives (the project never downloads a browser build of
// its own). As root on a Debian-like system it installs the package; otherwise it prints the
// command and exits 3, which the test reports as its reason to skip. Exit 1: an install was tried
// and failed.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const BIN = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const COMMAND = "apt-get update && apt-get install -y --no-install-recommends chromium";

const works = () =>
  existsSync(BIN) &&
  spawnSync(BIN, ["--version"], { stdio: "ignore", timeout: 30_000 }).status === 0;
const has = (cmd) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;

if (works()) process.exit(0);
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (process.env.CHROMIUM_BIN || !root || !has("apt-get")) {
  console.error(
    [
      process.env.CHROMIUM_BIN
        ? `CHROMIUM_BIN=${BIN} does not run.`
        : `the console's browser test needs Chromium at ${BIN}, and ${root ? "there is no apt-get" : "only root installs it"}.`,
      `  Debian/Ubuntu: sudo sh -c '${COMMAND}'`,
      "  Elsewhere:     set CHROMIUM_BIN to a Chromium or Chrome binary",
    ].join("\n"),
  );
  process.exit(3);
}
console.error("chromium is missing: installing the Debian package (apt-get install chromium)...");
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
const install = spawnSync(
  "apt-get",
  ["install", "-y", "-qq", "--no-install-recommends", "chromium"],
  { stdio: ["ignore", "ignore", "inherit"], env },
);
if (update.status === 0 && install.status === 0 && works()) process.exit(0);
console.error(`installing chromium failed.\n  Run by hand: ${COMMAND}`);
process.exit(1);

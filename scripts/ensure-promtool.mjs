#!/usr/bin/env node
// Makes sure the alert tests (test/ops/alerts.test.ts) have promtool, which checks the rules and
// runs their unit tests (deploy/prometheus/alerts.test.yml). As root on a Debian-like system it
// installs Debian's `prometheus` package, which ships promtool (the server it also installs is
// not started in a container). Skipped when PROMTOOL_BIN names a promtool, or one is on PATH.
// Elsewhere it prints what to do; the alert tests then fail with the same message.
import { spawnSync } from "node:child_process";

const has = (cmd) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;
const configured = process.env.PROMTOOL_BIN;
if ((configured && has(configured)) || has("promtool")) process.exit(0);

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (root && spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0) {
  console.error("promtool is missing: installing Debian's prometheus package (apt-get)...");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () =>
    spawnSync(
      "apt-get",
      [
        "-o",
        "DPkg::Lock::Timeout=600",
        "install",
        "-y",
        "-qq",
        "--no-install-recommends",
        "prometheus",
      ],
      { stdio: "inherit", env },
    ).status === 0;
  if (!install()) {
    spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=600", "update", "-qq"], {
      stdio: "inherit",
      env,
    });
    install();
  }
  if (has("promtool")) process.exit(0);
}
console.error(
  [
    "promtool is needed for the alert tests (promtool check rules, promtool test rules).",
    "  Debian/Ubuntu: sudo apt-get install -y prometheus (ships promtool)",
    "  Otherwise: a Prometheus release's promtool on PATH, or PROMTOOL_BIN pointing at it.",
  ].join("\n"),
);
process.exit(0); // npm test goes on; the alert tests fail with this message

#!/usr/bin/env node
// Makes sure the nemesis tests (test/nemesis/) have their tools: iproute2 (network namespaces),
// iptables (partitions), util-linux's nsenter, and libfaketime (a gateway's clock stepped while it
// runs). As root on a Debian-like system it installs the missing packages; otherwise it prints the
// command, and the nemesis tests skip with the same reason.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
const LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

if (process.platform !== "linux") process.exit(0);
const packages = [];
if (!has("ip", ["-V"])) packages.push("iproute2");
if (!has("iptables")) packages.push("iptables");
if (!has("nsenter")) packages.push("util-linux");
if (!existsSync(LIBFAKETIME)) packages.push("faketime");
if (packages.length === 0) process.exit(0);

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (root && has("apt-get")) {
  console.error(`nemesis tools missing: installing ${packages.join(" ")} (apt-get)...`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const r = spawnSync("apt-get", ["install", "-y", "-qq", ...packages], { stdio: "inherit", env });
  if (r.status === 0) process.exit(0);
}
console.error(
  `The nemesis tests need: ${packages.join(", ")} (and root). ` +
    `Debian/Ubuntu: sudo apt-get install -y ${packages.join(" ")}. They skip until then.`,
);
process.exit(0); // npm test goes on; the nemesis tests print the same reason and skip

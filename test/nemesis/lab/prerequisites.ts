// What the nemesis needs from the machine: root (namespaces, iptables, mounts), iproute2,
// iptables, nsenter, and libfaketime for the clock step. `scripts/ensure-nemesis-tools.mjs`
// (run by `npm test`) installs the packages as root; this says what is still missing and how to
// get it, so a test can skip with that reason instead of failing half-way.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { LIBFAKETIME } from "./gateways.js";

const works = (cmd: string, args: string[]) =>
  spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/** Reasons the nemesis cannot run here; empty when it can. */
export function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.platform !== "linux") return ["the nemesis needs Linux (network namespaces)"];
  if (process.getuid?.() !== 0) {
    missing.push("root (network namespaces, iptables and tmpfs mounts): run the tests as root");
  }
  if (!works("ip", ["-V"])) missing.push("ip: apt-get install iproute2");
  if (!works("iptables", ["--version"])) missing.push("iptables: apt-get install iptables");
  if (!works("nsenter", ["--version"])) missing.push("nsenter: apt-get install util-linux");
  if (!existsSync(LIBFAKETIME)) missing.push(`${LIBFAKETIME}: apt-get install faketime`);
  return missing;
}

// Fetches one Debian suite's nats-server package without installing it (apt-get download with a
// private source list: nothing on the system changes) and unpacks its binary into a .cache/
// directory. Used by ensure-current-nats.mjs (unstable: the current release) and
// ensure-nats-2.10.mjs (trixie: 2.10). Returns the binary's path, or null with the hint printed.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/** The cached binary when it runs; else fetches `suite`'s package into `cache`. */
export function debianNatsServer({ suite, cache, label, hint }) {
  const target = join(cache, "nats-server");
  if (has(target)) return target;
  if (!has("apt-get") || !has("dpkg-deb")) {
    console.error(hint);
    return null;
  }
  console.error(`fetching ${label} (Debian ${suite}'s package) into .cache/ ...`);
  const apt = join(cache, "apt");
  for (const d of ["lists/partial", "cache/archives/partial", "deb", "root"]) {
    mkdirSync(join(apt, d), { recursive: true });
  }
  writeFileSync(join(apt, "sources.list"), `deb http://deb.debian.org/debian ${suite} main\n`);
  const opts = [
    "-o",
    `Dir::Etc::SourceList=${join(apt, "sources.list")}`,
    "-o",
    "Dir::Etc::SourceParts=/dev/null",
    "-o",
    `Dir::State::Lists=${join(apt, "lists")}`,
    "-o",
    `Dir::Cache=${join(apt, "cache")}`,
    "-o",
    "APT::Sandbox::User=root",
    "-qq",
  ];
  const update = spawnSync("apt-get", [...opts, "update"], { stdio: "inherit" });
  const download = spawnSync("apt-get", [...opts, "download", "nats-server"], {
    stdio: "inherit",
    cwd: join(apt, "deb"),
  });
  const deb = readdirSync(join(apt, "deb")).find((f) => f.endsWith(".deb"));
  if (update.status !== 0 || download.status !== 0 || !deb) {
    console.error(`could not fetch the package.\n${hint}`);
    return null;
  }
  spawnSync("dpkg-deb", ["-x", join(apt, "deb", deb), join(apt, "root")], { stdio: "inherit" });
  const unpacked = join(apt, "root", "usr", "sbin", "nats-server");
  if (!existsSync(unpacked) || !has(unpacked)) {
    console.error(`the package did not contain a working nats-server.\n${hint}`);
    return null;
  }
  copyFileSync(unpacked, target);
  chmodSync(target, 0o755);
  console.error(`${label} ready: ${target}`);
  return target;
}

#!/usr/bin/env node
// The tests also run what needs a current nats-server (per-message TTL: 2.11+) against one, while
// the rest runs on the distribution's package (2.9.10 on Debian bookworm). This fetches Debian
// unstable's nats-server package without installing it (apt-get download with a private source
// list, nothing on the system changes) and unpacks its binary into .cache/nats-current/. Skipped
// when NATS_SERVER_CURRENT_BIN names a binary, or when the cached one is there. Elsewhere it
// prints what to do; the tests that need it then fail with the same message.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  writeFileSync,
  copyFileSync,
  chmodSync,
} from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const CACHE = join(ROOT, ".cache", "nats-current");
const TARGET = join(CACHE, "nats-server");
const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

const configured = process.env.NATS_SERVER_CURRENT_BIN;
if ((configured && has(configured)) || has(TARGET)) process.exit(0);

const hint = [
  "A current nats-server (2.11 or newer) is needed for the per-message TTL tests.",
  "  Debian/Ubuntu as root: npm run pretest (fetches Debian unstable's package into .cache/)",
  "  Otherwise: point NATS_SERVER_CURRENT_BIN at a nats-server >= 2.11 binary.",
].join("\n");

if (!has("apt-get", ["--version"]) || !has("dpkg-deb", ["--version"])) {
  console.error(hint);
  process.exit(0); // npm test goes on; the tests that need it fail with this message
}
console.error("fetching a current nats-server (Debian unstable's package) into .cache/ ...");
const apt = join(CACHE, "apt");
for (const d of ["lists/partial", "cache/archives/partial", "deb", "root"]) {
  mkdirSync(join(apt, d), { recursive: true });
}
writeFileSync(join(apt, "sources.list"), "deb http://deb.debian.org/debian sid main\n");
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
  process.exit(0);
}
spawnSync("dpkg-deb", ["-x", join(apt, "deb", deb), join(apt, "root")], { stdio: "inherit" });
const unpacked = join(apt, "root", "usr", "sbin", "nats-server");
if (!existsSync(unpacked) || !has(unpacked)) {
  console.error(`the package did not contain a working nats-server.\n${hint}`);
  process.exit(0);
}
copyFileSync(unpacked, TARGET);
chmodSync(TARGET, 0o755);
console.error(`current nats-server ready: ${TARGET}`);

#!/usr/bin/env node
// Makes sure the Workflow DevKit tests (test/integration/workflow/) and `npm run bench:workflow`
// have PostgreSQL's server binaries (initdb, postgres): they run a throwaway cluster in a temp
// directory on a random port. As root on Debian/Ubuntu it installs the distribution's
// `postgresql` package; otherwise it prints the command to run and fails (the tests would fail
// with the same message: they never skip). With --print, it prints the binaries' directory.
import { existsSync, readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";

/** The newest /usr/lib/postgresql/<version>/bin holding initdb and postgres, or null. */
function postgresBinDir() {
  if (process.env.POSTGRES_BIN_DIR) return process.env.POSTGRES_BIN_DIR;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = `${root}/${v}/bin`;
    if (existsSync(`${bin}/initdb`) && existsSync(`${bin}/postgres`)) return bin;
  }
  return null;
}

const HOW = "Debian/Ubuntu: sudo apt-get install -y postgresql (or set POSTGRES_BIN_DIR)";

const done = () => {
  if (process.argv.includes("--print")) console.log(postgresBinDir());
  process.exit(0);
};
{
  if (postgresBinDir() !== null) done();
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  const has = (cmd) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;
  if (root && has("apt-get")) {
    console.error("postgresql missing: installing it (apt-get)...");
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const lock = ["-o", "DPkg::Lock::Timeout=600"];
    const install = () =>
      spawnSync("apt-get", [...lock, "install", "-y", "-qq", "postgresql"], {
        stdio: "inherit",
        env,
      }).status === 0;
    if (!install()) {
      spawnSync("apt-get", [...lock, "update", "-qq"], { stdio: "inherit", env });
      install();
    }
    if (postgresBinDir() !== null) done();
  }
  console.error(`The Workflow DevKit tests need PostgreSQL's server binaries. ${HOW}.`);
  process.exit(1);
}

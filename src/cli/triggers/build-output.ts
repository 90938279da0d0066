// The queue triggers of a Build Output API directory (`.vercel/output`, what `vercel build` and
// framework builders such as the Workflow DevKit's write): every `functions/**/<name>.func/
// .vc-config.json` with `experimentalTriggers`. Each function is served at its path under
// `functions/` without `.func` (`functions/.well-known/workflow/v1/flow.func` ->
// `/.well-known/workflow/v1/flow`), so no route needs deriving; its entries are named by that
// path (`functions/…/flow.func`), which `--route` overrides use too.
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  parseJsonObject,
  parseTriggerList,
  type DeclaredTriggers,
  type Trigger,
} from "./vercel-json.js";

/** Folders deeper than this under `functions/` are not searched (a guard against cycles). */
const MAX_DEPTH = 32;

/** The triggers of every function under `<dir>/functions`; `source` names `dir` in messages. */
export async function readBuildOutput(dir: string, source: string): Promise<DeclaredTriggers> {
  const triggers: Trigger[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
  const walk = async (abs: string, rel: string[], depth: number): Promise<void> => {
    const real = await realpath(abs);
    if (seen.has(real) || depth > MAX_DEPTH) return;
    seen.add(real);
    const entries = await readdir(abs, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(abs, e.name);
      // Symbolic links count as what they point at (`vercel build` links identical functions).
      const isDir = e.isDirectory() || (e.isSymbolicLink() && (await isDirectory(path)));
      if (!isDir) continue;
      if (e.name.endsWith(".func")) {
        const fn = [...rel, e.name.slice(0, -".func".length)];
        await readFunction(path, `functions/${[...rel, e.name].join("/")}`, `/${fn.join("/")}`);
      } else {
        await walk(path, [...rel, e.name], depth + 1);
      }
    }
  };
  const readFunction = async (path: string, name: string, route: string) => {
    const at = `${source}/${name}/.vc-config.json`;
    let text: string;
    try {
      text = await readFile(join(path, ".vc-config.json"), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // not a function after all
      throw err;
    }
    const doc = parseJsonObject(text, at);
    if (doc.experimentalTriggers === undefined) return;
    const found = parseTriggerList(doc.experimentalTriggers, at, name, route);
    triggers.push(...found.triggers);
    warnings.push(...found.warnings);
  };
  await walk(join(dir, "functions"), [], 0);
  return { triggers, warnings };
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false; // a dangling link
  }
}

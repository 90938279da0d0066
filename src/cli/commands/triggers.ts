// `vqs triggers ...`: push triggers declared in vercel.json and in a Build Output API directory
// (.vercel/output). `sync` stores them as consumer settings (src/cli/triggers/ holds the logic;
// this file is flags and output).
import type { Command } from "commander";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Context } from "../context.js";
import { PartialFailure, UnreachableError, UsageError } from "../errors.js";
import type { Column, Colour } from "../output.js";
import type { Change } from "../triggers/plan.js";
import { parseAppUrl, parseRouteOverride, type RouteOverride } from "../triggers/routes.js";
import { planEntries, syncEntries, type SyncAction, type SyncResult } from "../triggers/sync.js";
import { readBuildOutput } from "../triggers/build-output.js";
import {
  parseVercelJson,
  VercelJsonError,
  type DeclaredTriggers,
} from "../triggers/vercel-json.js";
import { examples, type ContextOf } from "./help.js";

interface SyncOptions {
  readonly vercelJson: string;
  readonly buildOutput: string;
  readonly appUrl: string;
  readonly route?: string[];
  readonly prune?: boolean;
  readonly dryRun?: boolean;
}

export function triggersCommand(program: Command, contextOf: ContextOf): void {
  const triggers = program
    .command("triggers")
    .description(
      "push triggers declared in vercel.json or .vercel/output (experimentalTriggers, queue/v2beta)",
    );
  examples(triggers, [
    "vqs triggers sync --vercel-json vercel.json --app-url http://localhost:3000",
  ]);

  const sync = triggers
    .command("sync")
    .description(
      "store each queue trigger of vercel.json and of the Build Output API's .vc-config.json " +
        "files as its consumer group's push settings (the trigger's consumer, else the group " +
        "@vercel/queue's dev mode names after the file; only what changes is written)",
    )
    .option("--vercel-json <file>", "the app's vercel.json (read when it exists)", "vercel.json")
    .option(
      "--build-output <dir>",
      "a Build Output API directory: every functions/**/*.func/.vc-config.json (read when it exists)",
      ".vercel/output",
    )
    .requiredOption("--app-url <url>", "the app's base URL, which each route is appended to")
    .option(
      "--route <file=path>",
      "the route (or absolute URL) of a functions entry, when it cannot be derived from its path; repeatable",
      (value: string, all: string[] | undefined) => [...(all ?? []), value],
    )
    .option("--prune", "also remove the push settings of groups no longer declared")
    .option("--dry-run", "show what would change, change nothing")
    .action(async (_options: SyncOptions, cmd: Command) => {
      const ctx = contextOf(cmd);
      await runSync(ctx, cmd.opts<SyncOptions>(), {
        vercelJson: cmd.getOptionValueSource("vercelJson") !== "default",
        buildOutput: cmd.getOptionValueSource("buildOutput") !== "default",
      });
    });
  examples(sync, [
    "vqs triggers sync --vercel-json vercel.json --app-url http://localhost:3000",
    "vqs triggers sync --app-url https://orders.internal --prune --dry-run",
    "vqs triggers sync --build-output .vercel/output --app-url http://app:3000 --deployment-id dpl_1",
    'vqs triggers sync --app-url http://app:3000 --route "api/*.ts=/api/queue" --json',
  ]);
}

/** Which sources were named on the command line (an unreadable one is then an error). */
interface Given {
  readonly vercelJson: boolean;
  readonly buildOutput: boolean;
}

async function runSync(ctx: Context, o: SyncOptions, given: Given): Promise<void> {
  const appUrl = parseAppUrl(o.appUrl);
  if (typeof appUrl === "string") throw new UsageError(appUrl);
  const overrides: RouteOverride[] = [];
  for (const text of o.route ?? []) {
    const parsed = parseRouteOverride(text);
    if (typeof parsed === "string") throw new UsageError(parsed);
    overrides.push(parsed);
  }

  const declared = await readDeclared(ctx, o, given);
  for (const w of declared.warnings) ctx.out.warn(w);
  const entries = planEntries(declared.triggers, appUrl, overrides);
  const api = ctx.api();
  if (entries.length === 0) ctx.out.warn(`${declared.sources} declare no queue/v2beta triggers`);

  const results = await syncEntries(api, entries, {
    prune: o.prune === true,
    dryRun: o.dryRun === true,
  });

  if (ctx.out.json) ctx.out.printJson(results);
  else printReport(ctx, results, o.dryRun === true);

  const failed = results.filter((r) => r.action === "failed").length;
  if (failed > 0) throw new PartialFailure(`${failed} of ${results.length} entries failed`);
}

/**
 * The triggers of vercel.json and of the Build Output directory, each read when it exists (or
 * when named, which then must exist); at least one of them must.
 */
async function readDeclared(
  ctx: Context,
  o: SyncOptions,
  given: Given,
): Promise<DeclaredTriggers & { sources: string }> {
  const triggers: DeclaredTriggers["triggers"] = [];
  const warnings: string[] = [];
  const sources: string[] = [];
  const add = (found: DeclaredTriggers, source: string) => {
    triggers.push(...found.triggers);
    warnings.push(...found.warnings);
    sources.push(source);
  };
  try {
    const text = await readFile(ctx.path(o.vercelJson), "utf8").catch((err: unknown) => {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      if (code === "ENOENT" && !given.vercelJson) return null;
      throw new UnreachableError(`cannot read ${o.vercelJson}: ${code}`, "file_unreadable");
    });
    if (text !== null) add(parseVercelJson(text, o.vercelJson), o.vercelJson);
    const functions = join(ctx.path(o.buildOutput), "functions");
    const isDir = await stat(functions).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (isDir) add(await readBuildOutput(ctx.path(o.buildOutput), o.buildOutput), o.buildOutput);
    else if (given.buildOutput) {
      throw new UnreachableError(
        `cannot read ${o.buildOutput}: it has no functions/ folder`,
        "file_unreadable",
      );
    }
  } catch (err) {
    if (err instanceof VercelJsonError) throw new UsageError(err.message, "invalid_vercel_json");
    throw err;
  }
  if (sources.length === 0) {
    throw new UnreachableError(
      `found neither ${o.vercelJson} nor ${o.buildOutput}/functions: name one with --vercel-json or --build-output`,
      "file_unreadable",
    );
  }
  return { triggers, warnings, sources: sources.join(" and ") };
}

const ACTION_COLOURS: Record<SyncAction, Colour | undefined> = {
  created: "green",
  updated: "yellow",
  unchanged: "dim",
  pruned: "magenta",
  failed: "red",
};

const COLUMNS: Column<SyncResult>[] = [
  { header: "ACTION", value: (r) => r.action, colour: (r) => ACTION_COLOURS[r.action] },
  { header: "TOPIC", value: (r) => r.topic },
  { header: "GROUP", value: (r) => r.consumerGroup },
  { header: "URL", value: (r) => r.url ?? "" },
  {
    header: "CHANGES",
    value: (r) =>
      r.error
        ? `${r.error.code} (HTTP ${r.error.status}): ${r.error.message}`
        : r.changes.map(describeChange).join(", "),
    colour: (r) => (r.error ? "red" : undefined),
  },
];

export function describeChange(c: Change): string {
  const v = (x: unknown) => (typeof x === "string" ? x : JSON.stringify(x));
  if (c.from === undefined) return `${c.field}=${v(c.to)}`;
  if (c.to === undefined) return `${c.field} removed`;
  return `${c.field}: ${v(c.from)} -> ${v(c.to)}`;
}

function printReport(ctx: Context, results: readonly SyncResult[], dryRun: boolean): void {
  if (results.length > 0) ctx.out.printTable(COLUMNS, results);
  const counts = new Map<SyncAction, number>();
  for (const r of results) counts.set(r.action, (counts.get(r.action) ?? 0) + 1);
  const summary =
    [...counts].map(([action, n]) => `${n} ${action}`).join(", ") || "nothing to sync";
  ctx.out.print(dryRun ? `${summary} (dry run: nothing was changed)` : summary);
}

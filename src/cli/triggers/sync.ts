// `vqs triggers sync`: declared queue triggers (vercel.json, Build Output API) -> consumer
// settings documents, over the
// API. planEntries() decides everything that needs no server (names, routes, URLs) and refuses
// the whole run on a usage problem, before anything is sent; syncEntries() then reads each
// document, PUTs only what changes, and with --prune removes push settings no longer declared.
// An entry the API refuses is reported and the others still tried.
import { ApiError, UsageError } from "../errors.js";
import type { ApiClient, SettingsDocument } from "../api-client.js";
import { filePathToConsumerGroup } from "./consumer-group.js";
import {
  entryKey,
  mergeTrigger,
  pruneCandidates,
  pruneDocument,
  type Change,
  type DeclaredEntry,
} from "./plan.js";
import { deriveRoute, pushUrl, type RouteOverride } from "./routes.js";
import type { Trigger } from "./vercel-json.js";

export type SyncAction = "created" | "updated" | "unchanged" | "pruned" | "failed";

/** One line of the report (the JSON array of --json has these). */
export interface SyncResult {
  readonly action: SyncAction;
  readonly topic: string;
  readonly consumerGroup: string;
  /** The functions key; null for a pruned document (declared nowhere any more). */
  readonly file: string | null;
  readonly route: string | null;
  /** The push URL: the new one, or the one removed by a prune. */
  readonly url: string | null;
  readonly changes: Change[];
  /** What was attempted, when the action is "failed". */
  readonly attempted?: "create" | "update" | "prune";
  readonly error?: { readonly status: number; readonly code: string; readonly message: string };
  /** --dry-run: this is what would happen; nothing was changed. */
  readonly dryRun?: true;
}

/** Groups, routes and URLs of the triggers; every problem at once, as one UsageError. */
export function planEntries(
  triggers: readonly Trigger[],
  appUrl: URL,
  overrides: readonly RouteOverride[],
): DeclaredEntry[] {
  const problems: string[] = [];
  const byFile = new Map<string, string>();
  for (const o of overrides) {
    if (!triggers.some((t) => t.file === o.file)) {
      problems.push(`--route "${o.file}=...": no queue trigger is declared for "${o.file}"`);
    } else if (byFile.has(o.file) && byFile.get(o.file) !== o.route) {
      problems.push(`--route "${o.file}=..." is given twice with different routes`);
    }
    byFile.set(o.file, o.route);
  }
  const entries: DeclaredEntry[] = [];
  const seen = new Set<string>();
  const routeProblems = new Set<string>();
  for (const t of triggers) {
    let route = byFile.get(t.file) ?? t.route;
    if (route === undefined) {
      const derived = deriveRoute(t.file);
      if (!derived.ok) {
        routeProblems.add(derived.reason);
        continue;
      }
      route = derived.route;
    }
    // The trigger's own consumer wins; without one, the group the client's dev mode uses.
    const group = t.consumer ?? filePathToConsumerGroup(t.file);
    const key = entryKey(t.topic, group);
    if (seen.has(key)) {
      problems.push(`"${t.file}" declares topic "${t.topic}" twice`);
      continue;
    }
    seen.add(key);
    entries.push({
      file: t.file,
      topic: t.topic,
      group,
      route,
      url: pushUrl(appUrl, route),
      ...(t.maxConcurrency !== undefined ? { maxConcurrency: t.maxConcurrency } : {}),
      ...(t.retryAfterSeconds !== undefined ? { retryAfterSeconds: t.retryAfterSeconds } : {}),
      ...(t.initialDelaySeconds !== undefined
        ? { initialDelaySeconds: t.initialDelaySeconds }
        : {}),
      ...(t.flowControl !== undefined ? { flowControl: t.flowControl } : {}),
    });
  }
  problems.push(...routeProblems);
  if (problems.length > 0) throw new UsageError(problems.join("\n"));
  return entries;
}

/**
 * Errors that make every further request pointless (bad token, tenant refused) are thrown;
 * the rest fail one entry.
 */
function isFatal(err: unknown): boolean {
  if (!(err instanceof ApiError)) return true;
  return err.status === 401 || err.code === "tenant_not_allowed";
}

function failure(err: unknown) {
  if (isFatal(err)) throw err;
  const e = err as ApiError;
  return { status: e.status, code: e.code, message: e.message };
}

export async function syncEntries(
  api: ApiClient,
  entries: readonly DeclaredEntry[],
  { prune = false, dryRun = false }: { prune?: boolean; dryRun?: boolean } = {},
): Promise<SyncResult[]> {
  const results: SyncResult[] = [];
  const flag = dryRun ? ({ dryRun: true } as const) : {};
  for (const e of entries) {
    const where = {
      topic: e.topic,
      consumerGroup: e.group,
      file: e.file,
      route: e.route,
      url: e.url,
    };
    let attempted: "create" | "update" | undefined;
    try {
      const merge = mergeTrigger(e, await api.getSettings(e.topic, e.group));
      if (merge.action !== "unchanged") {
        attempted = merge.action;
        if (!dryRun) await api.putSettings(e.topic, e.group, merge.body);
      }
      const action = merge.action === "unchanged" ? "unchanged" : (`${merge.action}d` as const);
      results.push({ action, ...where, changes: merge.changes, ...flag });
    } catch (err) {
      results.push({
        action: "failed",
        ...where,
        changes: [],
        ...(attempted ? { attempted } : {}),
        error: failure(err),
        ...flag,
      });
    }
  }
  if (!prune) return results;

  const declared = new Set(entries.map((e) => entryKey(e.topic, e.group)));
  for (const doc of pruneCandidates(await api.listSettings(), declared)) {
    const where = {
      topic: doc.topic,
      consumerGroup: doc.consumerGroup,
      file: null,
      route: null,
      url: doc.push?.url ?? null,
    };
    const plan = pruneDocument(doc);
    try {
      if (!dryRun) await applyPrune(api, doc, plan.body);
      results.push({ action: "pruned", ...where, changes: plan.changes, ...flag });
    } catch (err) {
      results.push({
        action: "failed",
        ...where,
        changes: [],
        attempted: "prune",
        error: failure(err),
        ...flag,
      });
    }
  }
  return results;
}

async function applyPrune(
  api: ApiClient,
  doc: SettingsDocument,
  body: ReturnType<typeof pruneDocument>["body"],
): Promise<void> {
  if (body) {
    await api.putSettings(doc.topic, doc.consumerGroup, body);
    return;
  }
  try {
    await api.deleteSettings(doc.topic, doc.consumerGroup);
  } catch (err) {
    // Gone already (removed meanwhile, or a retried DELETE): the state we wanted.
    if (!(err instanceof ApiError && err.code === "settings_not_found")) throw err;
  }
}

// The queue triggers a `vercel.json` declares: `functions` entries whose `experimentalTriggers`
// hold `{"type": "queue/v2beta", "topic": ...}`, read as `@vercel/queue`'s dev mode reads them
// (getDevRouteMappings), but strict where the client is silent: a malformed file or trigger is
// an error naming it, rather than a trigger quietly skipped. parseTriggerList() reads one such
// list, wherever it is declared (build-output.ts reads the Build Output API's with it). A
// trigger's `flowControl` (this service's extension) is checked by the settings API's own
// validation, so a bad one is refused here with the API's message, before anything is sent.
import { AppError } from "../../errors.js";
import { validateFlowControl } from "../../queue/settings/validate.js";
import type { FlowControlSettings } from "../api-client.js";

/** One declared trigger: the functions key (a file path) and what it asks for. */
export interface Trigger {
  /** The `functions` key, as written. */
  readonly file: string;
  /** A topic name, or a prefix pattern ending in `*`. */
  readonly topic: string;
  /** The consumer group named by the trigger; absent: the one named after `file`. */
  readonly consumer?: string;
  /** The route it is served at when known from where it is declared (Build Output API). */
  readonly route?: string;
  readonly retryAfterSeconds?: number;
  readonly initialDelaySeconds?: number;
  readonly maxConcurrency?: number;
  /** Limits per key, defaults filled in as the gateway stores them; absent (or null): none. */
  /** Declared: the trigger's (null: none, removing what is stored); absent: what is stored stays. */
  readonly flowControl?: FlowControlSettings | null;
}

export interface DeclaredTriggers {
  readonly triggers: Trigger[];
  /** Things skipped, for the user (other queue trigger versions, unknown fields). */
  readonly warnings: string[];
}

/** What the file holds is not a usable vercel.json; the message names the place. */
export class VercelJsonError extends Error {}

const NUMERIC = ["retryAfterSeconds", "initialDelaySeconds", "maxConcurrency"] as const;
const KNOWN = new Set<string>(["type", "topic", "consumer", "flowControl", ...NUMERIC]);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A configuration file's text as a JSON object; `source` names it in messages. */
export function parseJsonObject(text: string, source: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new VercelJsonError(
      `${source} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (!isObject(doc)) throw new VercelJsonError(`${source} must hold a JSON object`);
  return doc;
}

/** Parses the file's text; `source` names it in messages. */
export function parseVercelJson(text: string, source: string): DeclaredTriggers {
  const doc = parseJsonObject(text, source);
  const triggers: Trigger[] = [];
  const warnings: string[] = [];
  if (doc.functions === undefined) return { triggers, warnings };
  if (!isObject(doc.functions))
    throw new VercelJsonError(`${source}: "functions" must be an object`);

  for (const [file, config] of Object.entries(doc.functions)) {
    const at = `${source}: functions[${JSON.stringify(file)}]`;
    if (!isObject(config)) throw new VercelJsonError(`${at} must be an object`);
    const list = config.experimentalTriggers;
    if (list === undefined) continue;
    const found = parseTriggerList(list, at, file);
    triggers.push(...found.triggers);
    warnings.push(...found.warnings);
  }
  return { triggers, warnings };
}

/**
 * One `experimentalTriggers` value; `at` names it in messages, `file` and `route` are where its
 * function is (route: null when it must be derived from the file's path).
 */
export function parseTriggerList(
  list: unknown,
  at: string,
  file: string,
  route: string | null = null,
): DeclaredTriggers {
  if (!Array.isArray(list))
    throw new VercelJsonError(`${at}.experimentalTriggers must be an array`);
  const triggers: Trigger[] = [];
  const warnings: string[] = [];
  list.forEach((t: unknown, i) => {
    const here = `${at}.experimentalTriggers[${i}]`;
    if (!isObject(t)) throw new VercelJsonError(`${here} must be an object`);
    // Other kinds of triggers are not ours; other queue versions are skipped, as the client
    // skips them (with a warning).
    if (typeof t.type !== "string" || !t.type.startsWith("queue/")) return;
    if (t.type !== "queue/v2beta") {
      warnings.push(`${here}: type "${t.type}" is not supported (use "queue/v2beta"); skipped`);
      return;
    }
    if (typeof t.topic !== "string" || t.topic === "") {
      throw new VercelJsonError(`${here}.topic must be a topic name or a prefix ending in '*'`);
    }
    const trigger: { -readonly [K in keyof Trigger]: Trigger[K] } = { file, topic: t.topic };
    if (route !== null) trigger.route = route;
    if (t.consumer !== undefined) {
      // The name's rules are the gateway's, which says which one is broken (shown per entry).
      if (typeof t.consumer !== "string" || t.consumer === "") {
        throw new VercelJsonError(`${here}.consumer must be a consumer group name`);
      }
      trigger.consumer = t.consumer;
    }
    for (const key of NUMERIC) {
      const v = t[key];
      if (v === undefined) continue;
      // Type only: the gateway checks the bounds, and says which (shown per entry).
      if (typeof v !== "number" || !Number.isFinite(v)) {
        throw new VercelJsonError(`${here}.${key} must be a number`);
      }
      trigger[key] = v;
    }
    if (t.flowControl !== undefined) trigger.flowControl = flowControlOf(t.flowControl, here);
    for (const key of Object.keys(t)) {
      if (!KNOWN.has(key)) warnings.push(`${here}: "${key}" is not synced; ignored`);
    }
    triggers.push(trigger);
  });
  return { triggers, warnings };
}

/** A trigger's flowControl as the settings API reads it; refused with the API's own message. */
function flowControlOf(v: unknown, here: string): FlowControlSettings | null {
  try {
    return validateFlowControl(v);
  } catch (err) {
    if (err instanceof AppError) throw new VercelJsonError(`${here}: ${err.message}`);
    throw err;
  }
}

// What `triggers sync` changes, decided without I/O: the settings body for a declared trigger
// merged into the stored document, the changes that makes, and which stored push settings
// `--prune` removes. Decisions (docs/architecture.md, "The vqs tool"):
// - vercel.json owns push.url, push.maxConcurrency, retry.afterSeconds and
//   retry.initialDelaySeconds: a field the trigger leaves out goes back to its default;
// - flowControl (this service's extension) is the trigger's when it declares it (null: none);
//   left out, what is stored stays, since a framework's generated triggers cannot declare it;
// - every other field (push.timeoutSeconds, push.autoAck, retry.maxBackoffSeconds, deadLetter),
//   which an operator may have set, is kept as stored;
// - --prune takes only documents with push whose (topic, group) is no longer declared: the push
//   part is removed, and the document deleted when it has neither dead-letter settings nor
//   flowControl (retry timing applies to pushes only, so nothing else would remain in effect).
import { SETTINGS_LIMITS as L } from "../../queue/settings/settings-limits.js";
import { validateFlowControl } from "../../queue/settings/validate.js";
import type { FlowControlSettings, SettingsBody, SettingsDocument } from "../api-client.js";

/** A trigger ready to sync: where it is declared, its group and the URL it is pushed to. */
export interface DeclaredEntry {
  readonly file: string;
  readonly topic: string;
  readonly group: string;
  /** The route (`/api/orders`) or the absolute URL given with --route. */
  readonly route: string;
  readonly url: string;
  readonly maxConcurrency?: number;
  readonly retryAfterSeconds?: number;
  readonly initialDelaySeconds?: number;
  /** As the gateway stores it (vercel-json.ts checked it); null: none; absent: as stored. */
  readonly flowControl?: FlowControlSettings | null;
}

type Scalar = string | number | boolean;

/** One field that differs: `from` undefined when it was not set, `to` when it goes away. */
export interface Change {
  readonly field: string;
  readonly from?: Scalar;
  readonly to?: Scalar;
}

type Settings = Pick<SettingsDocument, "push" | "retry" | "deadLetter"> & {
  /** Absent from a gateway that predates flow control: none. */
  readonly flowControl?: FlowControlSettings | null;
};

/** The (topic, group) identity of a document. */
export function entryKey(topic: string, group: string): string {
  return JSON.stringify([topic, group]);
}

const defaultBackoff = (afterSeconds: number) =>
  Math.max(L.maxBackoffSeconds.default, afterSeconds);

/**
 * Every field of a document with the gateway's defaults where it is silent, flattened to
 * `push.url`-style names; a missing document is the defaults (polled, no dead letters). Without
 * push, the push fields count as their defaults too, so that adding push reports its URL and
 * only the fields set to something else (and removing it, the URL and what was not default);
 * flowControl likewise, by its key (`ordered` defaults to false, the other limits to none).
 */
function flatten(doc: Settings | null): Map<string, Scalar | undefined> {
  const after = doc?.retry?.afterSeconds ?? L.afterSeconds.default;
  const flow = doc?.flowControl ?? null;
  return new Map<string, Scalar | undefined>([
    ["push.url", doc?.push?.url],
    ["push.maxConcurrency", doc?.push?.maxConcurrency ?? L.maxConcurrency.default],
    ["push.timeoutSeconds", doc?.push?.timeoutSeconds ?? L.timeoutSeconds.default],
    ["push.autoAck", doc?.push?.autoAck ?? L.autoAck.default],
    ["retry.afterSeconds", after],
    ["retry.initialDelaySeconds", doc?.retry?.initialDelaySeconds ?? L.initialDelaySeconds.default],
    ["retry.maxBackoffSeconds", doc?.retry?.maxBackoffSeconds ?? defaultBackoff(after)],
    ["deadLetter.topic", doc?.deadLetter?.topic],
    ["deadLetter.maxDeliveries", doc?.deadLetter?.maxDeliveries],
    ["flowControl.key", flow?.key],
    ["flowControl.concurrency", flow?.concurrency ?? undefined],
    ["flowControl.rate.limit", flow?.rate?.limit],
    ["flowControl.rate.periodSeconds", flow?.rate?.periodSeconds],
    ["flowControl.rate.burst", flow?.rate?.burst],
    ["flowControl.ordered", flow?.ordered ?? false],
  ]);
}

/**
 * Parts whose removal one field says (its first): the fields that went with it are not
 * reported one by one.
 */
const PARTS: readonly (readonly [prefix: string, marker: string])[] = [
  ["push.", "push.url"],
  ["flowControl.", "flowControl.key"],
  ["flowControl.rate.", "flowControl.rate.limit"],
];

/** The fields in which `to` differs from `from`. */
export function diff(from: Settings | null, to: Settings | null): Change[] {
  const a = flatten(from);
  const b = flatten(to);
  const changes: Change[] = [];
  const removed = PARTS.filter(([, m]) => a.get(m) !== undefined && b.get(m) === undefined);
  for (const [field, before] of a) {
    const after = b.get(field);
    if (before === after) continue;
    if (removed.some(([prefix, marker]) => field.startsWith(prefix) && field !== marker)) continue;
    changes.push({
      field,
      ...(before !== undefined ? { from: before } : {}),
      ...(after !== undefined ? { to: after } : {}),
    });
  }
  return changes;
}

/** What the gateway stores for a body: the body with its defaults filled in. */
export function withDefaults(body: SettingsBody): Settings {
  const afterSeconds = body.retry?.afterSeconds ?? L.afterSeconds.default;
  return {
    push: body.push
      ? {
          url: body.push.url,
          maxConcurrency: body.push.maxConcurrency ?? L.maxConcurrency.default,
          timeoutSeconds: body.push.timeoutSeconds ?? L.timeoutSeconds.default,
          autoAck: body.push.autoAck ?? L.autoAck.default,
        }
      : null,
    retry: {
      afterSeconds,
      initialDelaySeconds: body.retry?.initialDelaySeconds ?? L.initialDelaySeconds.default,
      maxBackoffSeconds: body.retry?.maxBackoffSeconds ?? defaultBackoff(afterSeconds),
    },
    deadLetter: body.deadLetter ?? null,
    flowControl: validateFlowControl(body.flowControl),
  };
}

export interface Merge {
  readonly action: "create" | "update" | "unchanged";
  /** The body to PUT (nothing is PUT when unchanged). */
  readonly body: SettingsBody;
  readonly changes: Change[];
}

/** The declared trigger merged into the stored document (null: none stored). */
export function mergeTrigger(entry: DeclaredEntry, current: SettingsDocument | null): Merge {
  const push: NonNullable<SettingsBody["push"]> = {
    url: entry.url,
    ...(entry.maxConcurrency !== undefined ? { maxConcurrency: entry.maxConcurrency } : {}),
    ...(current?.push
      ? { timeoutSeconds: current.push.timeoutSeconds, autoAck: current.push.autoAck }
      : {}),
  };
  // A backoff cap other than its default was chosen by someone: keep it. The default one is
  // left out, so that the gateway derives it from the new afterSeconds.
  const keptBackoff =
    current && current.retry.maxBackoffSeconds !== defaultBackoff(current.retry.afterSeconds)
      ? current.retry.maxBackoffSeconds
      : undefined;
  const retry: NonNullable<SettingsBody["retry"]> = {
    ...(entry.retryAfterSeconds !== undefined ? { afterSeconds: entry.retryAfterSeconds } : {}),
    ...(entry.initialDelaySeconds !== undefined
      ? { initialDelaySeconds: entry.initialDelaySeconds }
      : {}),
    ...(keptBackoff !== undefined ? { maxBackoffSeconds: keptBackoff } : {}),
  };
  // Declared: the trigger's (null: none, as a PUT without it); left out: what is stored.
  const flowControl = entry.flowControl === undefined ? current?.flowControl : entry.flowControl;
  const body: SettingsBody = {
    push,
    ...(Object.keys(retry).length > 0 ? { retry } : {}),
    ...(current?.deadLetter ? { deadLetter: current.deadLetter } : {}),
    ...(flowControl ? { flowControl } : {}),
  };

  const changes = diff(current, withDefaults(body));
  const action = current === null ? "create" : changes.length > 0 ? "update" : "unchanged";
  return { action, body, changes };
}

/** Stored documents that --prune takes: with push, and no longer declared. */
export function pruneCandidates(
  stored: readonly SettingsDocument[],
  declared: ReadonlySet<string>,
): SettingsDocument[] {
  return stored.filter((d) => d.push !== null && !declared.has(entryKey(d.topic, d.consumerGroup)));
}

export interface Prune {
  /** null: DELETE the document; else PUT this body (the document without push). */
  readonly body: SettingsBody | null;
  readonly changes: Change[];
}

/** The document without its push part; deleted when nothing but push timing would remain. */
export function pruneDocument(doc: SettingsDocument): Prune {
  if (doc.deadLetter === null && !doc.flowControl) return { body: null, changes: diff(doc, null) };
  const body: SettingsBody = {
    retry: { ...doc.retry },
    deadLetter: doc.deadLetter,
    ...(doc.flowControl ? { flowControl: doc.flowControl } : {}),
  };
  return { body, changes: diff(doc, withDefaults(body)) };
}

// The settings body of a PUT, checked field by field against SETTINGS_LIMITS (settings-limits.ts) and
// returned with every default filled in. Every field is optional; a field this version does not
// know, at any level, is refused (a typo must not silently fall back to a default). Errors are
// 400 invalid_settings with a message naming the field's path, or 403
// push_destination_not_allowed for a well-formed push URL outside the operator's allow-list.
import { AppError } from "../../errors.js";
import { FLOW_RECORD_TTL_MS, isValidName } from "../limits.js";
import { headerKind } from "../message-headers.js";
import {
  DEFAULT_SETTINGS,
  type ConsumerSettings,
  type DeadLetterSettings,
  type FlowControlSettings,
  type PushSettings,
  type RetrySettings,
} from "./consumer-settings.js";
import { SETTINGS_LIMITS as L } from "./settings-limits.js";
import { checkPushDestination, type PushUrlPrefix } from "./push-destinations.js";
import type { TopicTarget } from "./topic-pattern.js";

type Json = Record<string, unknown>;

const PRINTABLE = /^[\x21-\x7e]+$/;

function invalid(message: string): never {
  throw new AppError("invalid_settings", { message });
}

/** A field's path for messages; user-chosen names are quoted and cut short. */
function pathOf(parent: string, key: string): string {
  const name = /^[A-Za-z0-9_$]{1,64}$/.test(key) ? key : JSON.stringify(key.slice(0, 64));
  return parent ? `${parent}.${name}` : name;
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Refuses any field of `obj` not in `known`. */
function onlyKnown(obj: Json, known: readonly string[], parent: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) invalid(`Unknown field ${pathOf(parent, key)}.`);
  }
}

function int(obj: Json, key: string, parent: string, min: number, max: number, def: number) {
  const v = obj[key];
  if (v === undefined) return def;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    invalid(`${pathOf(parent, key)} must be an integer from ${min} to ${max}.`);
  }
  return v;
}

/** Checks a body without the operator's allow-list: only 400s. */
export function validateSettings(body: unknown, target: TopicTarget): ConsumerSettings {
  if (!isObject(body)) invalid("The settings must be a JSON object.");
  onlyKnown(body, ["push", "retry", "deadLetter", "flowControl"], "");
  const settings = {
    push: push(body.push),
    retry: retry(body.retry),
    deadLetter: deadLetter(body.deadLetter, target),
    flowControl: validateFlowControl(body.flowControl),
  };
  // flowControl applies to polled and pushed groups alike (the same rules, FlowGate).
  return settings;
}

/** Checks a body completely: 400 for what is malformed, then 403 for a push URL not allowed. */
export function parseSettings(
  body: unknown,
  target: TopicTarget,
  pushPrefixes: readonly PushUrlPrefix[] | null,
): ConsumerSettings {
  const settings = validateSettings(body, target);
  if (settings.push) checkPushDestination(settings.push.url, pushPrefixes);
  return settings;
}

function push(v: unknown): PushSettings | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) invalid("push must be an object or null.");
  onlyKnown(v, ["url", "maxConcurrency", "timeoutSeconds", "autoAck"], "push");
  if (v.url === undefined) invalid("push.url is required when push is given.");
  const autoAck = v.autoAck === undefined ? L.autoAck.default : v.autoAck;
  if (typeof autoAck !== "boolean") invalid("push.autoAck must be true or false.");
  const { maxConcurrency: mc, timeoutSeconds: ts } = L;
  return {
    url: pushUrl(v.url),
    maxConcurrency: int(v, "maxConcurrency", "push", mc.min, mc.max, mc.default),
    timeoutSeconds: int(v, "timeoutSeconds", "push", ts.min, ts.max, ts.default),
    autoAck,
  };
}

/**
 * An absolute http(s) URL, returned normalized (what the pusher will request). Refused: other
 * schemes, relative URLs, credentials (they would end up in logs), fragments, and anything
 * outside printable ASCII (whitespace, CR/LF) or with a backslash, which URL parsers disagree on.
 */
function pushUrl(v: unknown): string {
  if (
    typeof v !== "string" ||
    v.length > L.pushUrlMaxLength ||
    !PRINTABLE.test(v) ||
    v.includes("\\") ||
    !/^https?:\/\//i.test(v)
  ) {
    invalid(
      `push.url must be an absolute http or https URL of at most ${L.pushUrlMaxLength} printable ASCII characters.`,
    );
  }
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    invalid("push.url is not a valid URL.");
  }
  if (url.username !== "" || url.password !== "" || /^[^/]*\/\/[^/?#]*@/.test(v)) {
    invalid("push.url must not contain a user or password: they would end up in logs.");
  }
  if (v.includes("#")) invalid("push.url must not have a fragment.");
  if (url.hostname === "") invalid("push.url must name a host.");
  return url.href;
}

function retry(v: unknown): RetrySettings {
  if (v === undefined) return DEFAULT_SETTINGS.retry;
  if (!isObject(v)) invalid("retry must be an object.");
  onlyKnown(v, ["afterSeconds", "initialDelaySeconds", "maxBackoffSeconds"], "retry");
  const { afterSeconds: a, initialDelaySeconds: d, maxBackoffSeconds: b } = L;
  const afterSeconds = int(v, "afterSeconds", "retry", a.min, a.max, a.default);
  const initialDelaySeconds = int(v, "initialDelaySeconds", "retry", d.min, d.max, d.default);
  // The cap defaults to an hour, or to afterSeconds when that is longer.
  const defaultBackoff = Math.max(b.default, afterSeconds);
  if (typeof v.maxBackoffSeconds === "number" && v.maxBackoffSeconds < afterSeconds) {
    invalid(
      `retry.maxBackoffSeconds must be an integer from retry.afterSeconds (${afterSeconds}) to ${b.max}.`,
    );
  }
  const maxBackoffSeconds = int(
    v,
    "maxBackoffSeconds",
    "retry",
    afterSeconds,
    b.max,
    defaultBackoff,
  );
  return { afterSeconds, initialDelaySeconds, maxBackoffSeconds };
}

function deadLetter(v: unknown, target: TopicTarget): DeadLetterSettings | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) invalid("deadLetter must be an object or null.");
  onlyKnown(v, ["topic", "maxDeliveries"], "deadLetter");
  const topic = v.topic;
  if (topic === undefined) invalid("deadLetter.topic is required when deadLetter is given.");
  if (typeof topic !== "string" || !isValidName(topic)) {
    invalid(
      "deadLetter.topic must be a topic name: 1-255 characters of A-Z, a-z, 0-9, '_' and '-'.",
    );
  }
  if (target.kind === "topic" && topic === target.topic) {
    invalid("deadLetter.topic must not be the group's own topic.");
  }
  if (target.kind === "pattern" && topic.startsWith(target.prefix)) {
    invalid(
      `deadLetter.topic must not be a topic the pattern ${target.pattern} matches: messages would be dead-lettered into their own topic.`,
    );
  }
  if (v.maxDeliveries === undefined) {
    invalid("deadLetter.maxDeliveries is required when deadLetter is given.");
  }
  const { min, max } = L.maxDeliveries;
  return { topic, maxDeliveries: int(v, "maxDeliveries", "deadLetter", min, max, min) };
}

const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * A body's `flowControl` (absent or null: none), returned with its defaults filled in; `vqs
 * triggers sync` checks a trigger's with it, so both refuse a value with the same message.
 */
export function validateFlowControl(v: unknown): FlowControlSettings | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) invalid("flowControl must be an object or null.");
  onlyKnown(v, ["key", "concurrency", "rate", "ordered"], "flowControl");
  const key = typeof v.key === "string" ? v.key.toLowerCase() : null;
  if (key === null || key.length > L.flowKeyMaxLength || !HEADER_NAME.test(key)) {
    invalid(
      `flowControl.key is required: a header name of 1-${L.flowKeyMaxLength} characters (letters, digits and !#$%&'*+.^_\`|~-).`,
    );
  }
  // A name a message's own headers never hold (src/queue/message-headers.ts) would key nothing.
  if (key === "__proto__" || headerKind(key) !== "own") {
    invalid(
      `flowControl.key must be a header a message keeps as its own (not ${key}: docs/api.md, "Message headers").`,
    );
  }
  const { flowConcurrency: c } = L;
  const concurrency =
    v.concurrency === null ? null : int(v, "concurrency", "flowControl", c.min, c.max, 0);
  const ordered = v.ordered === undefined ? false : v.ordered;
  if (typeof ordered !== "boolean") invalid("flowControl.ordered must be true or false.");
  const rate = flowRate(v.rate);
  const limit = concurrency === 0 ? null : concurrency;
  if (limit === null && rate === null && !ordered) {
    invalid(
      `flowControl needs a limit: concurrency (an integer from ${c.min} to ${c.max}), rate or ordered.`,
    );
  }
  // One in flight per key is what keeps its order: a larger concurrency would break it.
  if (ordered && limit !== null && limit > 1) {
    invalid(
      "flowControl.ordered allows one message of a key in flight: concurrency must be 1 or absent.",
    );
  }
  return { key, concurrency: limit, rate, ordered };
}

function flowRate(v: unknown): FlowControlSettings["rate"] {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) invalid("flowControl.rate must be an object or null.");
  onlyKnown(v, ["limit", "periodSeconds", "burst"], "flowControl.rate");
  const p = "flowControl.rate";
  if (v.limit === undefined || v.periodSeconds === undefined) {
    invalid(`${p}.limit and ${p}.periodSeconds are required when ${p} is given.`);
  }
  const { flowRateLimit: l, flowRatePeriodSeconds: s, flowRateBurst: b } = L;
  const limit = int(v, "limit", p, l.min, l.max, l.min);
  const periodSeconds = int(v, "periodSeconds", p, s.min, s.max, s.min);
  const burst = int(v, "burst", p, b.min, b.max, limit);
  // A key's record (its TAT) is forgotten once unwritten for FLOW_RECORD_TTL_MS: the time it may
  // run ahead, burst intervals, must fit in it, or a quiet key would come back with more room.
  if ((periodSeconds * 1000 * burst) / limit > FLOW_RECORD_TTL_MS) {
    invalid(
      `${p}: periodSeconds * burst / limit must be at most ${FLOW_RECORD_TTL_MS / 1000} (seconds a key's rate is remembered).`,
    );
  }
  return { limit, periodSeconds, burst };
}

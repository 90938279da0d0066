// Where a settings document applies: one topic, or every topic whose name starts with a prefix
// (`prefix*`: a valid topic name followed by exactly one `*`, the hosted platform's wildcard
// triggers). Only the settings endpoints accept a pattern; a `*` anywhere else is refused with
// invalid_topic_pattern (src/http/params.ts), so it never reads as a malformed name.
import { AppError } from "../../errors.js";
import { isValidName } from "../limits.js";

export type TopicTarget =
  | { readonly kind: "topic"; readonly topic: string }
  | { readonly kind: "pattern"; readonly pattern: string; readonly prefix: string };

/** Parses the `{topic}` of a settings path: a topic name or `prefix*`. */
export function parseTopicTarget(text: string): TopicTarget {
  if (!text.includes("*")) {
    if (!isValidName(text)) throw new AppError("invalid_topic_name");
    return { kind: "topic", topic: text };
  }
  const prefix = text.slice(0, -1);
  // One `*`, last, after a prefix that is itself a valid name (so `prefix*` is at most 256
  // characters and matches topics of up to 255).
  if (!text.endsWith("*") || prefix.length === 0 || !isValidName(prefix)) {
    throw new AppError("invalid_topic_pattern");
  }
  return { kind: "pattern", pattern: text, prefix };
}

/** The prefix of a stored `prefix*`, or null for a concrete topic. */
export function patternPrefix(topicOrPattern: string): string | null {
  return topicOrPattern.endsWith("*") ? topicOrPattern.slice(0, -1) : null;
}

/** Whether the document stored under `topicOrPattern` applies to `topic`. */
export function appliesTo(topicOrPattern: string, topic: string): boolean {
  const prefix = patternPrefix(topicOrPattern);
  return prefix === null ? topicOrPattern === topic : topic.startsWith(prefix);
}

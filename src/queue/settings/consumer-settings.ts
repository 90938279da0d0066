// A consumer group's settings: push delivery, retry timing, dead-lettering and flow control, with every default
// filled in. One document per (namespace, topic or topic pattern, group); see
// docs/architecture.md, "Consumer settings".
import type { ConsumerSettings, ConsumerSettingsDocument } from "../../api/settings.js";
import type { Namespace } from "../namespace.js";
import { SETTINGS_LIMITS } from "./settings-limits.js";

// The shapes are the API's definitions (src/api/settings.ts): what is stored is what is answered.
export type {
  ConsumerSettings,
  DeadLetterSettings,
  FlowControlSettings,
  PushSettings,
  RetrySettings,
} from "../../api/settings.js";

/** A stored settings document and where it applies. */
export interface SettingsEntry {
  readonly namespace: Namespace;
  /** A topic name, or a prefix pattern `prefix*` (see topic-pattern.ts). */
  readonly topic: string;
  readonly group: string;
  readonly settings: ConsumerSettings;
  /** ISO 8601, when the document was stored. */
  readonly updatedAt: string;
  /** Store revision: grows with every change of the region's settings. */
  readonly revision: number;
}

/** What a group has without a settings document: polled, default retry timing, no dead letters. */
export const DEFAULT_SETTINGS: ConsumerSettings = Object.freeze({
  push: null,
  retry: Object.freeze({
    afterSeconds: SETTINGS_LIMITS.afterSeconds.default,
    initialDelaySeconds: SETTINGS_LIMITS.initialDelaySeconds.default,
    maxBackoffSeconds: SETTINGS_LIMITS.maxBackoffSeconds.default,
  }),
  deadLetter: null,
  flowControl: null,
});

/** The HTTP shape of a document: the settings plus where they apply and when they were stored. */
export function settingsBody(e: SettingsEntry): ConsumerSettingsDocument {
  return {
    topic: e.topic,
    consumerGroup: e.group,
    push: e.settings.push,
    retry: e.settings.retry,
    deadLetter: e.settings.deadLetter,
    flowControl: e.settings.flowControl,
    updatedAt: e.updatedAt,
  };
}

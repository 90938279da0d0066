// The shapes the console reads from the gateway. The management API's are its definitions'
// types (src/api/management.ts) and the settings are the gateway's own types: type-only imports
// of modules that import nothing at run time but TypeBox, so the console still builds (esbuild
// drops them) and type-checks without Node's types. The settings and redrive answers around them
// are kept here until their operations have definitions too.
import type {
  ConsumerGroup as Group,
  Namespace as NamespaceInfo,
  PeekedMessage,
  PeekPage,
  PushHealth,
  Topic,
  TopicPage,
  TopicSettingsRef,
} from "../../src/api/management.js";
import type { DeadLetterOrigin } from "../../src/api/messages.js";
import type {
  ConsumerSettings,
  DeadLetterSettings,
  PushSettings,
  RetrySettings,
} from "../../src/queue/settings/consumer-settings.js";

export type { ConsumerSettings, DeadLetterSettings, PushSettings, RetrySettings };
export type {
  DeadLetterOrigin,
  Group,
  NamespaceInfo,
  PeekedMessage,
  PeekPage,
  PushHealth,
  Topic,
  TopicPage,
  TopicSettingsRef,
};

/** A stored consumer settings document (PUT/GET …/settings). */
export interface SettingsDocument extends ConsumerSettings {
  /** A topic name or a `prefix*` pattern. */
  readonly topic: string;
  readonly consumerGroup: string;
  readonly updatedAt: string;
}

/** The settings that apply to a group, and the topic or pattern they are stored for. */
export interface EffectiveSettings {
  readonly from: string;
  readonly settings: ConsumerSettings;
}

export interface RedriveResult {
  readonly moved: number;
  readonly remaining: number;
}

export interface PublishResult {
  readonly messageId?: string;
  readonly deferred?: boolean;
}

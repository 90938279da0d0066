// The shapes the console reads from the gateway: the API's definitions' types (src/api), as
// type-only imports of modules that import nothing at run time but TypeBox, so the console still
// builds (esbuild drops them) and type-checks without Node's types.
import type {
  BusiestKeys,
  BusyKey,
  ConsumerGroup as Group,
  Namespace as NamespaceInfo,
  PeekedMessage,
  PeekPage,
  PushHealth,
  Topic,
  TopicPage,
  TopicSettingsRef,
} from "../../src/api/management.js";
import type { DeadLetterOrigin, PublishAnswer as PublishResult } from "../../src/api/messages.js";
import type {
  ConsumerSettings,
  ConsumerSettingsDocument as SettingsDocument,
  DeadLetterSettings,
  FlowControlSettings,
  PushSettings,
  RedriveResult,
  RetrySettings,
  SettingsList,
} from "../../src/api/settings.js";

export type {
  ConsumerSettings,
  DeadLetterSettings,
  FlowControlSettings,
  PushSettings,
  RedriveResult,
  RetrySettings,
  SettingsDocument,
  SettingsList,
};
export type {
  BusiestKeys,
  BusyKey,
  DeadLetterOrigin,
  Group,
  NamespaceInfo,
  PeekedMessage,
  PeekPage,
  PublishResult,
  PushHealth,
  Topic,
  TopicPage,
  TopicSettingsRef,
};

/**
 * The settings that apply to a group, and the topic or pattern they are stored for (the console
 * pairs them itself; no operation answers this).
 */
export interface EffectiveSettings {
  readonly from: string;
  readonly settings: ConsumerSettings;
}

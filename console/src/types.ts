// The shapes the console reads from the gateway: the management API's (docs/api.md,
// "Management API") and the v3 API's settings and redrive answers. Kept by hand, except the settings
// themselves: those are the gateway's own types (a type-only import of a module that imports
// nothing at run time, so the console still builds and type-checks without Node's types).
import type {
  ConsumerSettings,
  DeadLetterSettings,
  PushSettings,
  RetrySettings,
} from "../../src/queue/settings/consumer-settings.js";

export type { ConsumerSettings, DeadLetterSettings, PushSettings, RetrySettings };

/** A settings document that applies to a topic, as the topic lists it. */
export interface TopicSettingsRef {
  /** The topic itself, or the `prefix*` pattern the document comes from. */
  readonly topic: string;
  readonly consumerGroup: string;
  readonly push: boolean;
  readonly deadLetterTopic: string | null;
}

export interface Topic {
  readonly name: string;
  /** Visible to consumer groups. */
  readonly messages: number;
  /** Not yet visible. */
  readonly delayed: number;
  readonly bytes: number;
  readonly oldestMessageAt: string | null;
  readonly newestMessageAt: string | null;
  readonly consumerGroups: number;
  readonly settings: readonly TopicSettingsRef[];
}

export interface TopicPage {
  readonly topics: readonly Topic[];
  readonly nextCursor: string | null;
}

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

export interface PushHealth {
  readonly lastSuccessAt: string | null;
  readonly lastFailureAt: string | null;
  readonly lastFailure: string | null;
}

export interface Group {
  readonly name: string;
  /** Not yet delivered. */
  readonly backlog: number;
  /** Delivered, not acknowledged. */
  readonly inFlight: number;
  readonly delayed: number;
  /** 0 when nothing is unacknowledged (or the oldest is younger than half a second). */
  readonly oldestUnacknowledgedAgeSeconds: number;
  /** Deliveries made, redeliveries included. */
  readonly deliveries: number;
  readonly redelivered: number;
  readonly acknowledgedThrough: number;
  readonly position: number;
  readonly deadLettered: number;
  /**
   * The settings that apply (the group's own, or a pattern's), or null. Where they come from is
   * in the topic's `settings` list.
   */
  readonly settings: ConsumerSettings | null;
  readonly pushHealth: PushHealth | null;
}

export interface DeadLetterOrigin {
  readonly topic: string;
  readonly consumerGroup: string;
  readonly messageId: string;
  readonly deliveryCount: number;
}

export interface PeekedMessage {
  readonly messageId: string;
  readonly timestamp: string;
  readonly expiresAt: string;
  readonly contentType: string | null;
  readonly size: number;
  /** The first 256 bytes: text when they are UTF-8, else base64 (previewEncoding). */
  readonly preview: string;
  readonly previewEncoding: "utf8" | "base64";
  /** The whole payload in base64, with payload=full. */
  readonly payload?: string;
  readonly deadLetter: DeadLetterOrigin | null;
}

export interface PeekPage {
  readonly messages: readonly PeekedMessage[];
  readonly next: string | null;
}

export interface NamespaceInfo {
  readonly team: string;
  readonly project: string;
  readonly environment: string;
  readonly deploymentId: string | null;
  /** `team/project/environment[/deployment]`, each part percent-encoded: the Vqs-Namespace value. */
  readonly label: string;
  readonly topics: number;
}

export interface RedriveResult {
  readonly moved: number;
  readonly remaining: number;
}

export interface PublishResult {
  readonly messageId?: string;
  readonly deferred?: boolean;
}

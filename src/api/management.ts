// The management API (docs/api.md, "Management API"), defined once: each operation's input
// (path, query, body) and answers as TypeBox schemas. The gateway checks input against them and
// documents them (src/http/openapi/management-routes.ts), ManagementService answers their types,
// and the CLI and the console read them (type-only imports).
import { Type, type Static } from "typebox";
import { LIMITS } from "../queue/limits.js";
import type { ConsumerSettings, FlowControlSettings } from "../queue/settings/consumer-settings.js";
import { DEAD_LETTER_ORIGIN } from "./messages.js";
import {
  checked,
  COUNT,
  described,
  NAME,
  nullable,
  ref,
  refTo,
  TIME,
  type InputError,
} from "./schema.js";

export const TOPIC = Type.Object(
  {
    name: NAME,
    messages: described(COUNT, "Messages consumer groups can see."),
    delayed: described(COUNT, "Delayed messages, not yet visible."),
    bytes: described(COUNT, "The topic's storage."),
    oldestMessageAt: nullable(TIME, { description: "null when empty." }),
    newestMessageAt: nullable(TIME, { description: "null when empty." }),
    consumerGroups: COUNT,
    settings: Type.Array(
      Type.Object({
        topic: Type.String({ description: "The topic, or the pattern the document is for." }),
        consumerGroup: NAME,
        push: Type.Boolean(),
        deadLetterTopic: nullable(NAME),
      }),
    ),
  },
  { $id: "Topic", description: "A topic's figures and the settings that apply to its groups." },
);

export const PUSH_HEALTH = Type.Object(
  {
    lastSuccessAt: nullable(TIME),
    lastFailureAt: nullable(TIME),
    lastFailure: nullable(Type.String()),
  },
  { $id: "PushHealth", description: "How a pushed group's pushes went lately." },
);

export const CONSUMER_GROUP = Type.Object(
  {
    name: NAME,
    backlog: described(COUNT, "Messages not yet delivered."),
    inFlight: described(COUNT, "Delivered, not acknowledged."),
    delayed: described(COUNT, "The topic's delayed messages."),
    oldestUnacknowledgedAgeSeconds: COUNT,
    deliveries: described(COUNT, "Deliveries made, redeliveries included."),
    redelivered: COUNT,
    acknowledgedThrough: described(COUNT, "Stream position up to which all are acknowledged."),
    position: described(COUNT, "The last delivered stream position."),
    deadLettered: COUNT,
    settings: nullable(refTo<ConsumerSettings>("ConsumerSettings"), {
      description: "The effective settings.",
    }),
    pushHealth: nullable(ref(PUSH_HEALTH), { description: "null unless pushed." }),
  },
  {
    $id: "ConsumerGroup",
    description: "A consumer group's figures, settings and push health.",
  },
);

export const PEEKED_MESSAGE = Type.Object(
  {
    messageId: Type.String(),
    timestamp: TIME,
    expiresAt: TIME,
    contentType: Type.String(),
    size: described(COUNT, "Payload bytes."),
    preview: Type.String({ description: "The first 256 bytes, as previewEncoding says." }),
    previewEncoding: Type.Unsafe<"utf8" | "base64">({ enum: ["utf8", "base64"] }),
    payload: Type.Optional(
      Type.String({
        contentEncoding: "base64",
        description:
          "The whole payload, with payload=full only, for an inline payload of at most 4 MiB (a larger one, like a large body, shows its preview only).",
      }),
    ),
    deadLetter: nullable(ref(DEAD_LETTER_ORIGIN)),
  },
  { $id: "PeekedMessage", description: "A message as peeking shows it (nothing is leased)." },
);

export const NAMESPACE_STORAGE = Type.Object(
  {
    usedBytes: described(
      COUNT,
      "Bytes the namespace holds: its topics' streams and its large bodies (what its quota counts).",
    ),
    largeBodyBytes: described(
      COUNT,
      "Of usedBytes, its large bodies in the body store (counted in whole chunks of 256 KiB).",
    ),
    limitBytes: described(COUNT, "The namespace's quota; 0: none."),
    topicLimitBytes: described(COUNT, "Each topic's quota; 0: none."),
  },
  {
    $id: "NamespaceStorage",
    description:
      "A namespace's storage against its quotas (VQS_NAMESPACE_MAX_BYTES, VQS_TOPIC_MAX_BYTES).",
  },
);

export const NAMESPACE = Type.Object(
  {
    team: Type.String(),
    project: Type.String(),
    environment: Type.String(),
    deploymentId: nullable(Type.String()),
    label: Type.String({ description: "What Vqs-Namespace takes to act in it." }),
    topics: COUNT,
    storage: ref(NAMESPACE_STORAGE),
  },
  { $id: "Namespace", description: "A namespace with topics in this region." },
);

export const BUSY_KEY = Type.Object(
  {
    key: nullable(Type.String(), {
      description:
        "The key's value (the `flowControl.key` header of a message of the key), cut at 256 characters; null when no message of the key could be read (the key is stored hashed).",
    }),
    keyTruncated: Type.Boolean({ description: "`key` was cut at 256 characters." }),
    keyHash: Type.String({ description: "The key's hash, as the key's record is named." }),
    inFlight: described(COUNT, "Messages of the key holding a slot now, on every gateway."),
    waiting: described(
      COUNT,
      "Messages of the key in the waiting sample that hold no slot (a sampled figure: see `waitingSample`).",
    ),
  },
  { $id: "BusyKey", description: "One flow-control key of a group, and how busy it is." },
);

/** The components the operations refer to (registered and listed under their `$id`). */
export const MANAGEMENT_COMPONENTS = [
  TOPIC,
  PUSH_HEALTH,
  CONSUMER_GROUP,
  PEEKED_MESSAGE,
  NAMESPACE_STORAGE,
  NAMESPACE,
  BUSY_KEY,
];

export type Topic = Static<typeof TOPIC>;
export type TopicSettingsRef = Topic["settings"][number];
export type PushHealth = Static<typeof PUSH_HEALTH>;
export type ConsumerGroup = Static<typeof CONSUMER_GROUP>;
export type PeekedMessage = Static<typeof PEEKED_MESSAGE>;
export type NamespaceStorage = Static<typeof NAMESPACE_STORAGE>;
export type Namespace = Static<typeof NAMESPACE>;
export type BusyKey = Static<typeof BUSY_KEY>;

// Input. Paths are TOPIC_PATH and GROUP_PATH (schema.ts); query parameters answer 400
// invalid_query naming the parameter (each given at most once); a seek body 400
// invalid_request_body.

const QUERY_ERROR: InputError = { code: "invalid_query" };

/** An integer query parameter within its bounds; absent: its default. */
function queryInt(bounds: { min: number; max: number; default: number }, description: string) {
  return Type.Optional(
    checked(
      Type.Integer({
        minimum: bounds.min,
        maximum: bounds.max,
        default: bounds.default,
        description,
      }),
      QUERY_ERROR,
    ),
  );
}

/** A listing's `cursor`: where the previous page ended (its nextCursor), opaque to the client. */
const PAGE_CURSOR = Type.Optional(
  checked(
    Type.String({
      pattern: "^[A-Za-z0-9_-]{1,255}$",
      description: "Where the previous page ended: its nextCursor.",
    }),
    { code: "invalid_query", message: "`cursor` is not one this API gave." },
  ),
);

// Properties in the order they are checked.
export const LIST_TOPICS_QUERY = Type.Object({
  limit: queryInt(LIMITS.topicsPageLimit, "Topics of the page at most."),
  cursor: PAGE_CURSOR,
});

export const TOPIC_PAGE = Type.Object({
  topics: Type.Array(ref(TOPIC)),
  nextCursor: nullable(Type.String(), {
    description:
      "null on the last page. A page holds at most 100 topics whatever `limit` asks (each topic's figures are several JetStream reads).",
  }),
  storage: ref(NAMESPACE_STORAGE),
});
export type TopicPage = Static<typeof TOPIC_PAGE>;

export const LIST_GROUPS_QUERY = Type.Object({
  limit: queryInt(LIMITS.groupsPageLimit, "Groups of the page at most."),
  cursor: PAGE_CURSOR,
});

export const CONSUMER_GROUPS = Type.Object({
  consumerGroups: Type.Array(ref(CONSUMER_GROUP)),
  nextCursor: nullable(Type.String(), { description: "null on the last page." }),
});
export type ConsumerGroups = Static<typeof CONSUMER_GROUPS>;

export const PEEK_QUERY = Type.Object({
  limit: queryInt(LIMITS.peekLimit, "Messages at most."),
  payload: Type.Optional(
    checked(
      Type.Unsafe<"preview" | "full">({
        enum: ["preview", "full"],
        default: "preview",
        description: "`full` adds each whole payload.",
      }),
      QUERY_ERROR,
    ),
  ),
  after: Type.Optional(
    checked(
      Type.String({
        description: "A message ID (from the one after it), or an ISO 8601 time (from then on).",
      }),
      QUERY_ERROR,
    ),
  ),
});

export const PEEK_PAGE = Type.Object({
  messages: Type.Array(ref(PEEKED_MESSAGE)),
  next: nullable(Type.String(), { description: "The `after` of the next page; null on the last." }),
  truncated: Type.Boolean({
    description:
      "The page was cut before `limit` messages: with payload=full, the whole payloads a page shows together stop at 4 MiB (`next` pages on).",
  }),
});
export type PeekPage = Static<typeof PEEK_PAGE>;

export const PURGED = Type.Object({
  purged: Type.Integer({ minimum: 0, description: "Messages removed." }),
});
export type Purged = Static<typeof PURGED>;

const SEEK_TARGET = Type.Unsafe<string>({
  oneOf: [{ enum: ["earliest", "latest"] }, TIME],
  description:
    "`earliest`: the oldest retained message; `latest`: messages published after now; a time: messages published from then on.",
});

export const SEEK_BODY = checked(
  Type.Object({ to: SEEK_TARGET }, { additionalProperties: false }),
  {
    code: "invalid_request_body",
    message: 'The body must be JSON of the form {"to": "earliest" | "latest" | "<ISO 8601 time>"}.',
  },
);
export type SeekBody = Static<typeof SEEK_BODY>;

export const SOUGHT = Type.Object({ to: SEEK_TARGET });
export type Sought = Static<typeof SOUGHT>;

export const NAMESPACES = Type.Object({ namespaces: Type.Array(ref(NAMESPACE)) });
export type Namespaces = Static<typeof NAMESPACES>;

export const BUSIEST_KEYS_QUERY = Type.Object({
  limit: queryInt(LIMITS.busiestKeysLimit, "Keys at most."),
});

export const BUSIEST_KEYS = Type.Object({
  flowControl: nullable(refTo<FlowControlSettings>("FlowControlSettings"), {
    description: "The group's effective flow control; null: none, and `keys` is empty.",
  }),
  keys: Type.Array(ref(BUSY_KEY), {
    description: "Most in flight and waiting together first; keys with neither are not listed.",
  }),
  keyRecords: Type.Object(
    {
      read: described(COUNT, "Key records read (at most 1,000 a request)."),
      complete: Type.Boolean({
        description: "Every key record of the group was read; false: `inFlight` is partial.",
      }),
    },
    { description: "Where `inFlight` comes from: the keys' slot records, region-wide." },
  ),
  waitingSample: Type.Object(
    {
      messages: described(COUNT, "Messages sampled (at most 1,000, and 4 MiB of payload)."),
      fromSequence: described(
        COUNT,
        "The sample's first stream position: past the group's acknowledgement floor.",
      ),
      complete: Type.Boolean({
        description: "The sample reached the topic's last message.",
      }),
    },
    {
      description:
        "Where `waiting` comes from: the group's oldest messages past its acknowledgement floor. A message acknowledged out of order past the floor is counted until the floor passes it.",
    },
  ),
});
export type BusiestKeys = Static<typeof BUSIEST_KEYS>;

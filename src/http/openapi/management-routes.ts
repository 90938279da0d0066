// The route schemas of the management API (docs/api.md, "Management API"). Documentation only
// (plugin.ts); the components they refer to are in management.ts.
import { LIMITS } from "../../queue/limits.js";
import {
  apiHeaders,
  boundedInt,
  errorResponses,
  GROUP_ERRORS,
  json,
  nullable,
  noContent,
  pathParams,
  ref,
  TIME,
  TOPIC_ERRORS,
} from "./shared.js";

const TAGS = ["management"];

/** A query string of plain values (each given at most once: else 400 invalid_query). */
function query(properties: Record<string, object>): object {
  return { type: "object", properties };
}

function list(component: string): object {
  return { type: "array", items: ref(component) };
}

export const LIST_TOPICS = {
  operationId: "listTopics",
  summary: "List topics",
  description: "The namespace's topics, ordered by name, a page at a time.",
  tags: TAGS,
  headers: apiHeaders(),
  querystring: query({
    cursor: {
      type: "string",
      description: "Where the previous page ended: its nextCursor.",
    },
    limit: boundedInt(LIMITS.topicsPageLimit, "Topics of the page at most."),
  }),
  response: {
    200: json("A page of topics.", {
      type: "object",
      required: ["topics", "nextCursor"],
      properties: {
        topics: list("Topic"),
        nextCursor: { ...nullable({ type: "string" }), description: "null on the last page." },
      },
    }),
    ...errorResponses(["invalid_query", "storage_unavailable"]),
  },
};

const TOPIC_NOT_FOUND = [...TOPIC_ERRORS, "topic_not_found", "storage_unavailable"] as const;

export const GET_TOPIC = {
  operationId: "getTopic",
  summary: "A topic's figures",
  description: "The topic's figures and the settings that apply to its groups.",
  tags: TAGS,
  params: pathParams("topic"),
  headers: apiHeaders(),
  response: {
    200: json("The topic.", ref("Topic")),
    ...errorResponses(TOPIC_NOT_FOUND),
  },
};

export const LIST_CONSUMERS = {
  operationId: "listConsumerGroups",
  summary: "A topic's consumer groups",
  description: "Each group's figures, effective settings and push health.",
  tags: TAGS,
  params: pathParams("topic"),
  headers: apiHeaders(),
  response: {
    200: json("The groups.", {
      type: "object",
      required: ["consumerGroups"],
      properties: { consumerGroups: list("ConsumerGroup") },
    }),
    ...errorResponses(TOPIC_NOT_FOUND),
  },
};

export const PEEK = {
  operationId: "peekMessages",
  summary: "Peek at messages",
  description:
    "The messages consumer groups see, oldest first. Peeking leases nothing and changes no delivery count.",
  tags: TAGS,
  params: pathParams("topic"),
  headers: apiHeaders(),
  querystring: query({
    after: {
      type: "string",
      description: "A message ID (from the one after it), or an ISO 8601 time (from then on).",
    },
    limit: boundedInt(LIMITS.peekLimit, "Messages at most."),
    payload: {
      enum: ["preview", "full"],
      default: "preview",
      description: "`full` adds each whole payload.",
    },
  }),
  response: {
    200: json("The messages.", {
      type: "object",
      required: ["messages", "next"],
      properties: {
        messages: list("PeekedMessage"),
        next: {
          ...nullable({ type: "string" }),
          description: "The `after` of the next page; null on the last.",
        },
      },
    }),
    ...errorResponses([...TOPIC_NOT_FOUND, "invalid_query"]),
  },
};

export const DELETE_TOPIC = {
  operationId: "deleteTopic",
  summary: "Delete a topic",
  description:
    "The topic, its messages, groups, settings and idempotency keys are gone (a later publish makes a new, empty topic). Audited.",
  tags: TAGS,
  params: pathParams("topic"),
  headers: apiHeaders(),
  response: { 204: noContent("Deleted."), ...errorResponses(TOPIC_NOT_FOUND) },
};

export const PURGE = {
  operationId: "purgeTopic",
  summary: "Purge a topic",
  description:
    "Every message is removed (delayed ones and idempotency keys too); groups and settings stay. Audited.",
  tags: TAGS,
  params: pathParams("topic"),
  headers: apiHeaders(),
  response: {
    200: json("Purged.", {
      type: "object",
      required: ["purged"],
      properties: { purged: { type: "integer", minimum: 0, description: "Messages removed." } },
    }),
    ...errorResponses(TOPIC_NOT_FOUND),
  },
};

const GROUP_NOT_FOUND = [...GROUP_ERRORS, "group_not_found", "storage_unavailable"] as const;

export const DELETE_GROUP = {
  operationId: "deleteConsumerGroup",
  summary: "Delete a consumer group",
  description:
    "The group, its position and leases are gone (its settings stay); its receipt handles answer 409. Audited.",
  tags: TAGS,
  params: pathParams("topic", "group"),
  headers: apiHeaders(),
  response: { 204: noContent("Deleted."), ...errorResponses(GROUP_NOT_FOUND) },
};

const SEEK_TARGET = {
  oneOf: [{ enum: ["earliest", "latest"] }, TIME],
  description:
    "`earliest`: the oldest retained message; `latest`: messages published after now; a time: messages published from then on.",
};

export const SEEK = {
  operationId: "seekConsumerGroup",
  summary: "Move a group's position",
  description:
    "The group next receives from there; its outstanding receipt handles answer 409. Audited.",
  tags: TAGS,
  params: pathParams("topic", "group"),
  headers: apiHeaders(),
  body: {
    content: {
      "application/json": {
        schema: {
          type: "object",
          additionalProperties: false,
          required: ["to"],
          properties: { to: SEEK_TARGET },
        },
      },
    },
  },
  response: {
    200: json("Sought.", {
      type: "object",
      required: ["to"],
      properties: { to: SEEK_TARGET },
    }),
    ...errorResponses([...GROUP_NOT_FOUND, "invalid_request_body", "payload_too_large"]),
  },
};

export const LIST_NAMESPACES = {
  operationId: "listNamespaces",
  summary: "List namespaces (operators)",
  description:
    "Operators only: every namespace with topics in this region; `label` is what Vqs-Namespace takes.",
  tags: TAGS,
  headers: apiHeaders(),
  response: {
    200: json("The namespaces.", {
      type: "object",
      required: ["namespaces"],
      properties: { namespaces: list("Namespace") },
    }),
    ...errorResponses(["storage_unavailable"]),
  },
};

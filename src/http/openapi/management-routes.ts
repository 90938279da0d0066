// The route schemas of the management API (docs/api.md, "Management API"): the operations'
// definitions (src/api/management.ts), which check the input (src/http/validation.ts) and type
// the handlers, with what the document adds (names, summaries, headers, error answers).
import {
  BUSIEST_KEYS,
  BUSIEST_KEYS_QUERY,
  CONSUMER_GROUPS,
  LIST_GROUPS_QUERY,
  LIST_TOPICS_QUERY,
  NAMESPACES,
  PEEK_PAGE,
  PEEK_QUERY,
  PURGED,
  SEEK_BODY,
  SOUGHT,
  TOPIC,
  TOPIC_PAGE,
} from "../../api/management.js";
import { GROUP_PATH, ref, TOPIC_PATH } from "../../api/schema.js";
import {
  apiHeaders,
  errorResponses,
  GROUP_ERRORS,
  json,
  noContent,
  TOPIC_ERRORS,
} from "./shared.js";

const TAGS = ["management"];

export const LIST_TOPICS = {
  operationId: "listTopics",
  summary: "List topics",
  description: "The namespace's topics, ordered by name, a page at a time.",
  tags: TAGS,
  headers: apiHeaders(),
  querystring: LIST_TOPICS_QUERY,
  response: {
    200: json("A page of topics.", TOPIC_PAGE),
    ...errorResponses(["invalid_query", "storage_unavailable"]),
  },
};

const TOPIC_NOT_FOUND = [...TOPIC_ERRORS, "topic_not_found", "storage_unavailable"] as const;

export const GET_TOPIC = {
  operationId: "getTopic",
  summary: "A topic's figures",
  description: "The topic's figures and the settings that apply to its groups.",
  tags: TAGS,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  response: {
    200: json("The topic.", ref(TOPIC)),
    ...errorResponses(TOPIC_NOT_FOUND),
  },
};

export const LIST_CONSUMERS = {
  operationId: "listConsumerGroups",
  summary: "A topic's consumer groups",
  description:
    "Each group's figures, effective settings and push health, by name, a page at a time (at most 100 groups a page whatever `limit` asks).",
  tags: TAGS,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  querystring: LIST_GROUPS_QUERY,
  response: {
    200: json("A page of groups.", CONSUMER_GROUPS),
    ...errorResponses([...TOPIC_NOT_FOUND, "invalid_query"]),
  },
};

export const PEEK = {
  operationId: "peekMessages",
  summary: "Peek at messages",
  description:
    "The messages consumer groups see, oldest first. Peeking leases nothing and changes no delivery count. With payload=full, a page's whole payloads stop at 4 MiB together (the page is `truncated`; `next` pages on), and a gateway answers a few such pages at once: past that, 503 peek_busy with Retry-After.",
  tags: TAGS,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  querystring: PEEK_QUERY,
  response: {
    200: json("The messages.", PEEK_PAGE),
    ...errorResponses([...TOPIC_NOT_FOUND, "invalid_query", "peek_busy"]),
  },
};

export const DELETE_TOPIC = {
  operationId: "deleteTopic",
  summary: "Delete a topic",
  description:
    "The topic, its messages, groups, settings and idempotency keys are gone (a later publish makes a new, empty topic). Audited.",
  tags: TAGS,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  response: { 204: noContent("Deleted."), ...errorResponses(TOPIC_NOT_FOUND) },
};

export const PURGE = {
  operationId: "purgeTopic",
  summary: "Purge a topic",
  description:
    "Every message is removed (delayed ones and idempotency keys too); groups and settings stay. Audited.",
  tags: TAGS,
  params: TOPIC_PATH,
  headers: apiHeaders(),
  response: {
    200: json("Purged.", PURGED),
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
  params: GROUP_PATH,
  headers: apiHeaders(),
  response: { 204: noContent("Deleted."), ...errorResponses(GROUP_NOT_FOUND) },
};

export const SEEK = {
  operationId: "seekConsumerGroup",
  summary: "Move a group's position",
  description:
    "The group next receives from there; its outstanding receipt handles answer 409. Audited.",
  tags: TAGS,
  params: GROUP_PATH,
  headers: apiHeaders(),
  body: {
    content: {
      "application/json": {
        schema: SEEK_BODY,
      },
    },
  },
  response: {
    200: json("Sought.", SOUGHT),
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
    200: json("The namespaces.", NAMESPACES),
    ...errorResponses(["storage_unavailable"]),
  },
};

export const LIST_KEYS = {
  operationId: "listBusiestKeys",
  summary: "A group's busiest flow-control keys",
  description:
    "Per key: its messages in flight (slot holders, every gateway's) and waiting (counted among the group's oldest 1,000 messages past its acknowledgement floor: a sampled figure). Bounded work: 1,000 key records, the sample, and a read per listed key whose value the sample lacks. A group without flowControl answers an empty list.",
  tags: TAGS,
  params: GROUP_PATH,
  headers: apiHeaders(),
  querystring: BUSIEST_KEYS_QUERY,
  response: {
    200: json("The busiest keys.", BUSIEST_KEYS),
    ...errorResponses([...GROUP_NOT_FOUND, "invalid_query"]),
  },
};

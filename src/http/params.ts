// Path parameters -> queue addresses (topic, group) in the request's namespace. A route's topic
// and group are checked against its definition (TOPIC_PATH, GROUP_PATH in src/api/schema.ts)
// before the handler runs; the settings routes' pattern is checked here.
import type { FastifyRequest } from "fastify";
import { AppError } from "../errors.js";
import { isValidName } from "../queue/limits.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";
import type { SettingsAddress } from "../queue/settings/settings-service.js";
import { parseTopicTarget } from "../queue/settings/topic-pattern.js";

type Params = Record<string, string | undefined>;

/** A name the route's definition checked; a route without that definition is a bug (500). */
function checkedName(request: FastifyRequest, name: "topic" | "group"): string {
  const value = (request.params as Params)[name] ?? "";
  if (!isValidName(value)) throw new Error(`${request.routeOptions.url}: ${name} not checked`);
  return value;
}

/** The topic of a route whose path is TOPIC_PATH (or starts as it). */
export function topicOf(request: FastifyRequest): TopicAddress {
  return { namespace: request.namespace, topic: checkedName(request, "topic") };
}

/** The group of a route whose path is GROUP_PATH (or starts as it). */
export function groupOf(request: FastifyRequest): GroupAddress {
  return { ...topicOf(request), group: checkedName(request, "group") };
}

/** The settings endpoints' address: a topic or a `prefix*` pattern, and a group. */
export function settingsAddressOf(request: FastifyRequest): SettingsAddress {
  const target = parseTopicTarget((request.params as Params).topic ?? "");
  const group = (request.params as Params).group ?? "";
  if (!isValidName(group)) throw new AppError("invalid_consumer_group_name");
  return { namespace: request.namespace, target, group };
}

export function param(request: FastifyRequest, name: string): string {
  return (request.params as Params)[name] ?? "";
}

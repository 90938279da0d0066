// Path parameters -> validated queue addresses (topic, group) in the request's namespace.
import type { FastifyRequest } from "fastify";
import { AppError } from "../errors.js";
import { isValidName } from "../queue/limits.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";
import type { SettingsAddress } from "../queue/settings/settings-service.js";
import { parseTopicTarget } from "../queue/settings/topic-pattern.js";

type Params = Record<string, string | undefined>;

export function topicOf(request: FastifyRequest): TopicAddress {
  const topic = (request.params as Params).topic ?? "";
  // A `*` names a pattern, which only the settings endpoints take: say so rather than call
  // the name malformed.
  if (topic.includes("*")) throw new AppError("invalid_topic_pattern");
  if (!isValidName(topic)) throw new AppError("invalid_topic_name");
  return { namespace: request.namespace, topic };
}

export function groupOf(request: FastifyRequest): GroupAddress {
  const topic = topicOf(request);
  const group = (request.params as Params).group ?? "";
  if (!isValidName(group)) throw new AppError("invalid_consumer_group_name");
  return { ...topic, group };
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

// Path parameters -> validated queue addresses (topic, group) in the request's namespace.
import type { FastifyRequest } from "fastify";
import { AppError } from "../errors.js";
import { isValidName } from "../queue/limits.js";
import type { GroupAddress, TopicAddress } from "../queue/namespace.js";

type Params = Record<string, string | undefined>;

export function topicOf(request: FastifyRequest): TopicAddress {
  const topic = (request.params as Params).topic ?? "";
  if (!isValidName(topic)) throw new AppError("invalid_topic_name");
  return { namespace: request.namespace, topic };
}

export function groupOf(request: FastifyRequest): GroupAddress {
  const topic = topicOf(request);
  const group = (request.params as Params).group ?? "";
  if (!isValidName(group)) throw new AppError("invalid_consumer_group_name");
  return { ...topic, group };
}

export function param(request: FastifyRequest, name: string): string {
  return (request.params as Params)[name] ?? "";
}

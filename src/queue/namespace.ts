// A tenant (team, project, environment from the token) plus an optional deployment ID is one
// isolated namespace: two namespaces never share topics, groups, messages or handles.

export interface Namespace {
  readonly team: string;
  readonly project: string;
  readonly environment: string;
  /** null in deploymentless mode. */
  readonly deployment: string | null;
  /** Injective canonical form; the input of every name and MAC derived from the namespace. */
  readonly key: string;
}

export function makeNamespace(
  team: string,
  project: string,
  environment: string,
  deployment: string | null,
): Namespace {
  const key = JSON.stringify([team, project, environment, deployment]);
  return Object.freeze({ team, project, environment, deployment, key });
}

/** How a namespace is shown (metrics labels, logs): team/project/environment[/deployment]. */
export function namespaceLabel(ns: Pick<Namespace, "key">): string {
  try {
    const parts = JSON.parse(ns.key) as (string | null)[];
    return parts.filter((p) => p !== null).join("/");
  } catch {
    return "?";
  }
}

/** The `Vqs-Namespace` form of a namespace: its parts percent-encoded, joined by "/". */
export function namespaceHeader(ns: Namespace): string {
  return [ns.team, ns.project, ns.environment, ...(ns.deployment === null ? [] : [ns.deployment])]
    .map(encodeURIComponent)
    .join("/");
}

/** A topic inside a namespace. */
export interface TopicAddress {
  readonly namespace: Namespace;
  readonly topic: string;
}

/** A consumer group of a topic. */
export interface GroupAddress extends TopicAddress {
  readonly group: string;
}

// Which concrete groups are pushed: every (namespace, topic, group) whose effective settings have
// `push`, with a `prefix*` document expanded to the namespace's topics it applies to (those the
// caller knows of: the adapter lists them and follows their creation). Whoever feeds pushes (the
// NATS adapter's push feeds, the in-memory twin's) opens a feed on each and closes the others.
import type { GroupAddress, Namespace } from "../namespace.js";
import type { SettingsStore } from "../settings/settings-store.js";
import { appliesTo, patternPrefix } from "../settings/topic-pattern.js";
import type { PushedSettings } from "./pusher.js";

export interface PushedGroup {
  readonly group: GroupAddress;
  readonly settings: PushedSettings;
}

/** The pushed groups, by `pushedGroupKey`. */
export function pushedGroups(
  settings: Pick<SettingsStore, "entries" | "effective">,
  topicsOf: (ns: Namespace) => Iterable<string>,
): Map<string, PushedGroup> {
  const out = new Map<string, PushedGroup>();
  const add = (namespace: Namespace, topic: string, group: string) => {
    const effective = settings.effective(namespace, topic, group);
    if (!effective?.push) return;
    const address = { namespace, topic, group };
    out.set(pushedGroupKey(address), { group: address, settings: effective as PushedSettings });
  };
  for (const e of settings.entries()) {
    if (patternPrefix(e.topic) === null) {
      add(e.namespace, e.topic, e.group);
      continue;
    }
    for (const topic of topicsOf(e.namespace)) {
      if (appliesTo(e.topic, topic)) add(e.namespace, topic, e.group);
    }
  }
  return out;
}

export function pushedGroupKey(g: GroupAddress): string {
  return JSON.stringify([g.namespace.key, g.topic, g.group]);
}

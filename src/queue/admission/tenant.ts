// A tenant is what one token names: (team, project, environment). Its deployments (the optional
// Vqs-Deployment-Id) are namespaces of their own, but every cap also holds for the tenant as a
// whole, so inventing deployment IDs gains nothing.
import type { Namespace } from "../namespace.js";

/** Namespaces whose tenant key is remembered (names are user input: bounded). */
const MAX_REMEMBERED = 50_000;
const tenantOfNamespace = new Map<string, string>();

/** The tenant's canonical key: the namespace key (JSON) without its deployment. */
export function tenantKey(ns: Pick<Namespace, "team" | "project" | "environment">): string {
  return JSON.stringify([ns.team, ns.project, ns.environment]);
}

/** The tenant key of a namespace key (src/queue/namespace.ts); remembered, since hot paths ask. */
export function tenantKeyOf(namespaceKey: string): string {
  let key = tenantOfNamespace.get(namespaceKey);
  if (key === undefined) {
    key = namespaceKey;
    try {
      const parts = JSON.parse(namespaceKey) as unknown;
      if (Array.isArray(parts) && parts.length === 4) key = JSON.stringify(parts.slice(0, 3));
    } catch {
      // Not a namespace key: it stands for itself.
    }
    if (tenantOfNamespace.size >= MAX_REMEMBERED) tenantOfNamespace.clear();
    tenantOfNamespace.set(namespaceKey, key);
  }
  return key;
}

/** The team of a namespace or tenant key; null for a key that is neither. */
export function teamOfKey(key: string): string | null {
  try {
    const parts = JSON.parse(key) as unknown;
    return Array.isArray(parts) && typeof parts[0] === "string" ? parts[0] : null;
  } catch {
    return null;
  }
}

// The signed-in session: the pasted token and the namespace choices, kept in sessionStorage (this
// tab only, gone when it closes; never localStorage, never a URL or a cookie).
import type { Credentials } from "./api.js";

export interface Session extends Credentials {
  /** The token may list namespaces and act in any (GET /api/v3/namespaces answered 200). */
  readonly operator: boolean;
}

const KEY = "vqs-console-session";

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.token !== "string" || !s.token) return null;
    return {
      token: s.token,
      deploymentId: typeof s.deploymentId === "string" ? s.deploymentId : "",
      namespace: typeof s.namespace === "string" ? s.namespace : "",
      operator: s.operator === true,
    };
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  try {
    if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage refused (private mode limits): the session lives in memory only
  }
}

/** The token's claims, for display only (the gateway verifies the token; the console never does). */
export function tokenClaims(token: string): Record<string, unknown> | null {
  const part = token.split(".")[1];
  if (!part) return null;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const json = new TextDecoder().decode(
      Uint8Array.from(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, "=")), (c) => c.charCodeAt(0)),
    );
    const claims = JSON.parse(json) as unknown;
    return typeof claims === "object" && claims !== null
      ? (claims as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

// Where pushes may go: the operator's allow-lists of URL prefixes, one for every tenant
// (VQS_PUSH_ALLOWED_URLS) and one per team or per team and project
// (VQS_TENANT_OVERRIDES' push entries), and the one matcher every check uses (settings are checked
// when stored, and the pusher checks again before each push, since the lists may have been
// narrowed since). A namespace may push inside the global list, its team's and its team and
// project's: never inside another tenant's.
//
// Matching compares parsed URLs, never strings: the scheme is equal; the host is equal after
// WHATWG normalization (case, IDN, IPv4 forms), so `http://localhost` allows neither
// `http://localhost.evil.com` nor `http://localhost@evil.com`; the port is equal to the
// prefix's, which is its scheme's default (80, 443) when the prefix names none, any port only
// when it says `:*`; the path starts with the prefix's path at a `/` boundary (`/api` allows
// `/api` and `/api/x`, not `/apix`), after the URL parser resolved `.`/`..` segments. A URL with
// credentials never matches. Which addresses a host name may resolve to is the transport's
// check (src/outbound/push-address-policy.ts).
import { AppError } from "../../errors.js";
import type { Namespace } from "../namespace.js";

export interface PushUrlPrefix {
  /** As configured. */
  readonly text: string;
  readonly protocol: "http:" | "https:";
  /** WHATWG-normalized host name (an IPv6 address keeps its brackets). */
  readonly hostname: string;
  /** null: any port (the entry said `:*`). */
  readonly port: number | null;
  /** Normalized path; "/" allows every path. */
  readonly path: string;
}

/** What development allows when no allow-list is set: this machine, any port. */
export const DEVELOPMENT_PUSH_URLS = ["http://localhost:*", "http://127.0.0.1:*"] as const;

const DEFAULT_PORTS = { "http:": 80, "https:": 443 } as const;

/** Printable ASCII without spaces: no whitespace, CR/LF, controls or non-ASCII to smuggle. */
const PRINTABLE = /^[\x21-\x7e]+$/;

/** Parses one allow-list entry; throws an Error saying what is wrong with it. */
export function parsePushUrlPrefix(text: string): PushUrlPrefix {
  const shape = /^(https?):\/\/([^/?#@\\]+)(\/[^?#\\]*)?$/i.exec(text);
  const authority = shape?.[2] ?? "";
  const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}|\*))?$/.exec(authority);
  if (!PRINTABLE.test(text) || !shape || !hostPort) {
    throw new Error(
      `"${text}" must be an http(s) URL prefix such as http://app.svc:3000/api ` +
        "(no user, query, fragment or spaces; `:*` for any port)",
    );
  }
  const anyPort = hostPort[2] === "*";
  let url: URL;
  try {
    // `:*` is ours, not a URL's: parsed without it.
    url = new URL(anyPort ? `${shape[1]}://${hostPort[1]}${shape[3] ?? ""}` : text);
  } catch {
    throw new Error(`"${text}" is not a valid URL`);
  }
  // Host names as DNS has them (a `*` would be taken literally, not as a wildcard).
  if (!/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname)) {
    throw new Error(`"${text}" must name one host (letters, digits, '-' and '.'; no wildcards)`);
  }
  const protocol = url.protocol as PushUrlPrefix["protocol"];
  // No port named: the scheme's, never every port.
  const port = anyPort
    ? null
    : hostPort[2] === undefined
      ? DEFAULT_PORTS[protocol]
      : Number(hostPort[2]);
  if (port !== null && (port < 1 || port > 65_535)) {
    throw new Error(`"${text}" has a port outside 1-65535`);
  }
  return {
    text,
    protocol,
    hostname: url.hostname,
    port,
    path: url.pathname || "/",
  };
}

/** Whether `url` is inside one of the prefixes. Anything that does not parse is outside. */
export function isPushUrlAllowed(url: string | URL, prefixes: readonly PushUrlPrefix[]): boolean {
  let u: URL;
  try {
    u = typeof url === "string" ? new URL(url) : url;
  } catch {
    return false;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return false;
  if (u.username !== "" || u.password !== "") return false;
  const port = u.port === "" ? DEFAULT_PORTS[u.protocol] : Number(u.port);
  return prefixes.some(
    (p) =>
      p.protocol === u.protocol &&
      p.hostname === u.hostname &&
      (p.port === null || p.port === port) &&
      underPath(u.pathname, p.path),
  );
}

function underPath(path: string, prefix: string): boolean {
  if (prefix === "/" || path === prefix) return true;
  return path.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`);
}

/**
 * The operator's allow-lists: `global` for every tenant (null: not set), `tenants` by team
 * ("team") or by team and project ("team/project").
 */
export class PushDestinations {
  readonly global: readonly PushUrlPrefix[] | null;
  readonly tenants: ReadonlyMap<string, readonly PushUrlPrefix[]>;

  constructor(
    global: readonly PushUrlPrefix[] | null,
    tenants: ReadonlyMap<string, readonly PushUrlPrefix[]> = new Map(),
  ) {
    this.global = global;
    this.tenants = tenants;
  }

  /** Whether no list is set at all: push is off on this service. */
  get off(): boolean {
    return this.global === null && this.tenants.size === 0;
  }

  /**
   * The prefixes a namespace may push to: the global list, its team's, its team and project's;
   * null when push is off on this service.
   */
  prefixesFor(ns: Pick<Namespace, "team" | "project">): readonly PushUrlPrefix[] | null {
    if (this.off) return null;
    const team = this.tenants.get(ns.team) ?? [];
    const project = this.tenants.get(`${ns.team}/${ns.project}`) ?? [];
    return [...(this.global ?? []), ...team, ...project];
  }
}

/**
 * Throws 403 push_destination_not_allowed unless the namespace's allow-lists have `url`.
 * `prefixes` null: push is off (production without any allow-list).
 */
export function checkPushDestination(url: string, prefixes: readonly PushUrlPrefix[] | null): void {
  if (prefixes === null) {
    throw new AppError("push_destination_not_allowed", {
      message:
        "Push delivery is off on this service: the operator must set VQS_PUSH_ALLOWED_URLS (or VQS_TENANT_OVERRIDES' push entries) to the URLs pushes may go to.",
    });
  }
  if (!isPushUrlAllowed(url, prefixes)) throw new AppError("push_destination_not_allowed");
}

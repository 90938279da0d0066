// Where an app serves a `vercel.json` functions entry: the route derived from the file's path
// (Next.js app router, Next.js pages router, plain Vercel Functions), an override given with
// `--route <file>=<path>`, and the push URL made of the app's base URL and the route.
// The rules and why: docs/architecture.md, "The vqs tool".

/** Source extensions of JavaScript/TypeScript route files (Next.js and Vercel Functions). */
const JS_EXTENSIONS = "(?:js|jsx|ts|tsx|mjs|mts|cjs|cts)";
/** Characters that make a functions key a glob pattern (Vercel matches keys as globs). */
const GLOB = /[*?{}!]/;

export type DerivedRoute =
  | { readonly ok: true; readonly route: string; readonly style: "app" | "pages" | "api" }
  | { readonly ok: false; readonly reason: string };

/**
 * The route of a functions entry, or why none can be derived:
 * - `app/**\/route.<ext>` (Next.js app router): the directory, route groups `(name)` and
 *   parallel-route slots `@name` dropped;
 * - `pages/api/**\/<name>.<ext>` (Next.js pages router): `/api/**` without the extension,
 *   `index` standing for its directory;
 * - `api/**\/<name>.<ext>` (Vercel Functions, any language): the same;
 * - a leading `src/` before `app/` or `pages/` (Next.js's src directory) is stripped;
 * - dynamic segments (`[id]`, `[...slug]`) are kept as written: the app's router matches them
 *   against the literal text, and the client's dev mode derives its URLs the same way.
 */
export function deriveRoute(file: string): DerivedRoute {
  const fail = (why: string): DerivedRoute => ({
    ok: false,
    reason: `cannot derive the route of "${file}": ${why}; pass --route "${file}=/its/path"`,
  });
  if (GLOB.test(file)) return fail("it is a glob pattern, not one file");
  if (file.includes("\\")) return fail("paths in vercel.json use '/'");
  const path = file.replace(/^\.\//, "").replace(/^src\/(?=(?:app|pages)\/)/, "");
  const parts = path.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) {
    return fail("it is not a plain relative path");
  }

  let m = new RegExp(`^app/(?:(.+)/)?route\\.${JS_EXTENSIONS}$`).exec(path);
  if (m) {
    const segments: string[] = [];
    for (const s of (m[1] ?? "").split("/").filter(Boolean)) {
      if (/^\(.+\)$/.test(s) || s.startsWith("@")) continue; // route group, parallel slot
      if (s.startsWith("_")) return fail(`"${s}" is a private folder, which Next.js never routes`);
      if (s.startsWith("(")) return fail(`"${s}" is an intercepting route`);
      segments.push(s);
    }
    return { ok: true, route: `/${segments.join("/")}`, style: "app" };
  }
  if (path.startsWith("app/")) {
    return fail("in the app router only route.ts (route.js, ...) files are route handlers");
  }

  m = new RegExp(`^pages/(api/.+)\\.${JS_EXTENSIONS}$`).exec(path);
  if (m) return { ok: true, route: indexRoute(m[1]!), style: "pages" };
  if (path.startsWith("pages/")) return fail("only files under pages/api/ are API routes");

  m = /^(api\/.+)\.[A-Za-z0-9]+$/.exec(path);
  if (m) {
    // Vercel serves no function from a file or folder whose name starts with '_' or '.'.
    if (parts.slice(1).some((p) => p.startsWith("_") || p.startsWith("."))) {
      return fail("Vercel ignores files and folders under api/ whose name starts with '_' or '.'");
    }
    return { ok: true, route: indexRoute(m[1]!), style: "api" };
  }
  return fail("it is not under app/, pages/api/ or api/ (with or without src/ for Next.js)");
}

/** `api/orders/index` -> `/api/orders`; `api/orders/new` -> `/api/orders/new`. */
function indexRoute(withoutExtension: string): string {
  return `/${withoutExtension.replace(/\/index$/, "")}`;
}

/** A `--route <file>=<path or URL>` override. */
export interface RouteOverride {
  readonly file: string;
  /** A path beginning with `/`, joined with --app-url, or an absolute http(s) URL used as is. */
  readonly route: string;
}

/**
 * Parses `<file>=<path>`: split at the first `=` followed by `/` or `http(s)://` (file names may
 * hold `=`). Returns an error message instead when it has no such shape.
 */
export function parseRouteOverride(text: string): RouteOverride | string {
  for (let i = text.indexOf("="); i > 0; i = text.indexOf("=", i + 1)) {
    const route = text.slice(i + 1);
    if (route.startsWith("/")) return { file: text.slice(0, i), route };
    if (/^https?:\/\//i.test(route)) {
      if (!URL.canParse(route)) return `--route "${text}": "${route}" is not a valid URL`;
      return { file: text.slice(0, i), route };
    }
  }
  return `--route "${text}" must be <file>=<path>, e.g. --route "app/api/orders/route.ts=/api/orders" (or <file>=<http(s) URL>)`;
}

/** Checks --app-url: an absolute http(s) URL without user, query or fragment. */
export function parseAppUrl(text: string): URL | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `--app-url "${text}" is not an absolute URL (e.g. http://localhost:3000)`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `--app-url "${text}" must be an http or https URL`;
  }
  if (url.username || url.password || url.search || url.hash || text.includes("#")) {
    return `--app-url "${text}" must not have a user, query or fragment`;
  }
  return url;
}

/**
 * The push URL: an absolute route as is, else the route under the app's base URL (its path
 * kept: `http://host/base` + `/api/x` = `http://host/base/api/x`). Normalized as the gateway
 * stores it (WHATWG serialization), so that comparing with a stored URL is meaningful.
 */
export function pushUrl(appUrl: URL, route: string): string {
  if (/^https?:\/\//i.test(route)) return new URL(route).href;
  const url = new URL(appUrl.href);
  url.pathname = url.pathname.replace(/\/+$/, "") + route;
  return url.href;
}

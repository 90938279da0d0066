// The web console at /console: the files `npm run build` writes to dist/console (index.html and
// content-hashed assets), read into memory once at start, gzipped once, and served with a strict
// Content-Security-Policy. No token is needed for these files: the page's API calls carry it.
// Client-side routes under /console/* answer index.html. Without a build, /console answers 503
// with a page that says to run `npm run build`. In development the page can ask for a token
// (GET /console/dev-token, loopback only).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../errors.js";

export interface ConsoleOptions {
  /** Where the build put the console (dist/console). */
  readonly assetsDir: string;
  /** Issues a development token (development auth only); null: /console/dev-token is 404. */
  readonly devToken: (() => Promise<string>) | null;
}

/** Only the bundle's own files: no inline script or style, API calls to this origin only. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Hashed names never change content: cached for a year. index.html is checked every time. */
const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "no-cache";

interface StaticFile {
  readonly body: Buffer;
  readonly gzipped: Buffer | null;
  readonly type: string;
  readonly etag: string;
}

function load(path: string): StaticFile {
  const body = readFileSync(path);
  const type = TYPES[extname(path)] ?? "application/octet-stream";
  const gzipped = /^(text|image\/svg)/.test(type) && body.length > 1024 ? gzipSync(body) : null;
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
  return { body, gzipped, type, etag };
}

/** The build's files, or null when there is no build (no index.html). */
function loadBuild(dir: string): { index: StaticFile; assets: Map<string, StaticFile> } | null {
  if (!existsSync(join(dir, "index.html"))) return null;
  const assets = new Map<string, StaticFile>();
  const assetsDir = join(dir, "assets");
  if (existsSync(assetsDir)) {
    for (const entry of readdirSync(assetsDir, { withFileTypes: true })) {
      if (entry.isFile()) assets.set(entry.name, load(join(assetsDir, entry.name)));
    }
  }
  return { index: load(join(dir, "index.html")), assets };
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vqs console: not built</title></head>
<body><h1>The console is not built</h1>
<p>This gateway serves the web console from <code>dist/console/</code>, which is missing.
Run <code>npm run build</code> (<code>npm start</code> does it), then reload this page.</p>
</body></html>
`;

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile, cache: string) {
  reply.header("cache-control", cache).header("etag", file.etag).header("vary", "accept-encoding");
  if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
  reply.type(file.type);
  const accepts = String(request.headers["accept-encoding"] ?? "");
  if (file.gzipped && /\bgzip\b/.test(accepts)) {
    return reply.header("content-encoding", "gzip").send(file.gzipped);
  }
  return reply.send(file.body);
}

/** A loopback peer that named a loopback host: not another machine, nor a rebound DNS name. */
function fromThisMachine(request: FastifyRequest): boolean {
  const peer = request.socket.remoteAddress ?? "";
  const loopbackPeer = /^(127\.|::1$|::ffff:127\.)/.test(peer);
  const host = (request.headers.host ?? "").replace(/:\d+$/, "").toLowerCase();
  return loopbackPeer && ["localhost", "127.0.0.1", "[::1]"].includes(host);
}

export async function installConsole(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const build = loadBuild(opts.assetsDir);
  if (!build) {
    app.log.warn(
      { dir: opts.assetsDir },
      "the web console is on but not built (no index.html): /console answers 503 until `npm run build`",
    );
  }
  await app.register((scope, _options, registered) => {
    scope.addHook("onSend", (_request, reply, payload, done) => {
      reply.headers(SECURITY_HEADERS);
      done(null, payload);
    });

    const page = (request: FastifyRequest, reply: FastifyReply) => {
      if (!build) {
        return reply
          .code(503)
          .header("cache-control", "no-store")
          .type("text/html; charset=utf-8")
          .send(NOT_BUILT);
      }
      return send(request, reply, build.index, REVALIDATE);
    };

    scope.get("/console", page);
    scope.get("/console/assets/:file", (request, reply) => {
      const file = build?.assets.get((request.params as { file: string }).file);
      if (!file) throw new AppError("route_not_found");
      return send(request, reply, file, IMMUTABLE);
    });
    scope.get("/console/dev-token", async (request, reply) => {
      if (!opts.devToken || !fromThisMachine(request)) throw new AppError("route_not_found");
      return reply.header("cache-control", "no-store").send({ token: await opts.devToken() });
    });
    // Client-side routes (/console/, /console/topics/orders, …) are the page; a missing asset
    // is not.
    scope.get("/console/*", (request, reply) => {
      if (request.url.startsWith("/console/assets/")) throw new AppError("route_not_found");
      return page(request, reply);
    });
    registered();
  });
}

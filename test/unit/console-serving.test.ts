// How the gateway serves the web console (src/http/plugins/console.ts): the page for /console
// and every client-side route under it, hashed assets cached for good, security headers on
// every answer, a clear 503 without a build, and the development token only where offered and
// only to this machine.
import Fastify, { type FastifyInstance } from "fastify";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installErrorHandling } from "../../src/http/error-handler.js";
import {
  CONSOLE_CSP,
  installConsole,
  type ConsoleOptions,
} from "../../src/http/plugins/console.js";

const INDEX = '<!doctype html><script type="module" src="/console/assets/main-ABC.js"></script>';
const SCRIPT = `console.log(${JSON.stringify("x".repeat(4000))});`;
let dir: string;
const apps: FastifyInstance[] = [];

async function app(options: Partial<ConsoleOptions> = {}): Promise<FastifyInstance> {
  const a = Fastify();
  installErrorHandling(a);
  await installConsole(a, { assetsDir: dir, devToken: null, ...options });
  apps.push(a);
  return a;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "vqs-console-unit-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), INDEX);
  writeFileSync(join(dir, "assets", "main-ABC.js"), SCRIPT);
  writeFileSync(join(dir, "assets", "main-DEF.css"), "body{margin:0}");
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  rmSync(dir, { recursive: true, force: true });
});

function expectSecurityHeaders(headers: Record<string, unknown>): void {
  expect(headers["content-security-policy"]).toBe(CONSOLE_CSP);
  expect(CONSOLE_CSP).toContain("script-src 'self'");
  expect(CONSOLE_CSP).toContain("connect-src 'self'");
  expect(CONSOLE_CSP).not.toContain("unsafe-inline");
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("no-referrer");
}

describe("the console's files", () => {
  it("answers the page for /console, /console/ and every client-side route", async () => {
    const a = await app();
    for (const url of ["/console", "/console/", "/console/topics/orders", "/console/settings"]) {
      const r = await a.inject({ url });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(r.headers["cache-control"]).toBe("no-cache");
      expect(r.body).toBe(INDEX);
      expectSecurityHeaders(r.headers);
    }
  });

  it("serves hashed assets for a year, gzipped when asked, with an ETag", async () => {
    const a = await app();
    const r = await a.inject({ url: "/console/assets/main-ABC.js" });
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(r.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(r.body).toBe(SCRIPT);
    expectSecurityHeaders(r.headers);
    const gz = await a.inject({
      url: "/console/assets/main-ABC.js",
      headers: { "accept-encoding": "gzip, br" },
    });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.rawPayload).toString()).toBe(SCRIPT);
    const again = await a.inject({
      url: "/console/assets/main-ABC.js",
      headers: { "if-none-match": String(r.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    const css = await a.inject({ url: "/console/assets/main-DEF.css" });
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
  });

  it("answers 404 route_not_found for an asset that is not there, never the page", async () => {
    const a = await app();
    for (const url of [
      "/console/assets/nope.js",
      "/console/assets/",
      "/console/assets/index.html",
      "/console/assets/a/b.js",
      "/console/assets/%2e%2e%2findex.html",
    ]) {
      const r = await a.inject({ url });
      expect(r.statusCode, url).toBe(404);
      expect(r.json(), url).toEqual({
        error: { code: "route_not_found", message: "No such endpoint." },
      });
    }
  });

  it("says to run npm run build when there is no build (503)", async () => {
    const empty = mkdtempSync(join(tmpdir(), "vqs-console-none-"));
    try {
      const a = await app({ assetsDir: empty });
      const r = await a.inject({ url: "/console/" });
      expect(r.statusCode).toBe(503);
      expect(r.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(r.body).toContain("npm run build");
      expectSecurityHeaders(r.headers);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe("the development token", () => {
  it("is 404 where the gateway offers none (OIDC, production)", async () => {
    const a = await app();
    const r = await a.inject({ url: "/console/dev-token", headers: { host: "localhost:8080" } });
    expect(r.statusCode).toBe(404);
  });

  it("is given to this machine only, never cached", async () => {
    const a = await app({ devToken: () => Promise.resolve("dev.jwt.token") });
    const local = await a.inject({
      url: "/console/dev-token",
      headers: { host: "127.0.0.1:8080" },
    });
    expect(local.statusCode).toBe(200);
    expect(local.json()).toEqual({ token: "dev.jwt.token" });
    expect(local.headers["cache-control"]).toBe("no-store");
    // Another machine, or a page whose host name was rebound to this machine's address.
    const remote = await a.inject({
      url: "/console/dev-token",
      headers: { host: "127.0.0.1:8080" },
      remoteAddress: "192.0.2.10",
    });
    expect(remote.statusCode).toBe(404);
    const rebound = await a.inject({
      url: "/console/dev-token",
      headers: { host: "evil.example:8080" },
    });
    expect(rebound.statusCode).toBe(404);
  });
});

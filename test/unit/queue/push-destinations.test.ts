// The push allow-lists: how VQS_PUSH_ALLOWED_URLS and VQS_TENANT_OVERRIDES (and its old VQS_PUSH_ALLOWED_URLS_TEAMS) are read,
// that their matching cannot be fooled by look-alike hosts, credentials, ports, paths or
// encodings, and that a namespace gets only its own tenant's lists.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import {
  isPushUrlAllowed,
  parsePushUrlPrefix,
  PushDestinations,
  type PushUrlPrefix,
} from "../../../src/queue/settings/push-destinations.js";

const list = (...entries: string[]): PushUrlPrefix[] => entries.map(parsePushUrlPrefix);
const allowed = (prefixes: PushUrlPrefix[], url: string) => isPushUrlAllowed(url, prefixes);

const oidc = {
  VQS_OIDC_JWKS_URL: "https://oidc.example/jwks",
  VQS_OIDC_ISSUER: "https://oidc.example/team",
  VQS_OIDC_AUDIENCE: "https://example/team",
};
const production = {
  ...oidc,
  NODE_ENV: "production",
  NATS_URL: "nats://n:4222",
  VQS_RECEIPT_SECRET: "s".repeat(32),
};

describe("push URL allow-list", () => {
  const dev = list("http://localhost:*", "http://127.0.0.1:*");

  it("allows this machine on any port and path in development", () => {
    for (const url of [
      "http://localhost/",
      "http://localhost:3000/api/queue",
      "HTTP://LOCALHOST:3000/x",
      "http://LocalHost/x",
      "http://127.0.0.1:65535/",
      "http://127.1/", // the same address, as WHATWG URLs read it
      "http://0x7f.0.0.1/",
    ]) {
      expect(allowed(dev, url), url).toBe(true);
    }
  });

  it("refuses look-alike hosts, credentials, other schemes and addresses", () => {
    for (const url of [
      "http://localhost.evil.com/",
      "http://localhost@evil.com/",
      "http://evil.com@localhost/", // credentials never match
      "http://user:pw@localhost/",
      "http://127.0.0.1.nip.io/",
      "http://127.0.0.2/",
      "http://[::1]:3000/",
      "https://localhost/", // the prefix says http
      "http://localhost./",
      "file:///etc/passwd",
      "javascript:alert(1)",
      "ftp://localhost/",
      "not a url",
      "",
      "//localhost/",
    ]) {
      expect(allowed(dev, url), url).toBe(false);
    }
  });

  it("matches the entry's port, its scheme's default when it names none, any only with :*", () => {
    const ported = list("http://app.svc:3000", "https://hooks.example.com:443");
    expect(allowed(ported, "http://app.svc:3000/x")).toBe(true);
    expect(allowed(ported, "http://app.svc/x")).toBe(false);
    expect(allowed(ported, "http://app.svc:30000/x")).toBe(false);
    expect(allowed(ported, "https://hooks.example.com/x")).toBe(true);
    expect(allowed(ported, "https://hooks.example.com:443/x")).toBe(true);
    expect(allowed(ported, "https://hooks.example.com:8443/x")).toBe(false);
    const portless = list("https://hooks.example.com", "http://app.svc/api");
    expect(allowed(portless, "https://hooks.example.com/x")).toBe(true);
    expect(allowed(portless, "https://hooks.example.com:443/x")).toBe(true);
    expect(allowed(portless, "https://hooks.example.com:8443/x")).toBe(false);
    expect(allowed(portless, "http://app.svc/api/q")).toBe(true);
    expect(allowed(portless, "http://app.svc:80/api/q")).toBe(true);
    expect(allowed(portless, "http://app.svc:8080/api/q")).toBe(false);
    const anyPort = list("https://hooks.example.com:*/q");
    expect(allowed(anyPort, "https://hooks.example.com:8443/q")).toBe(true);
    expect(allowed(anyPort, "https://hooks.example.com/q/x")).toBe(true);
    expect(allowed(anyPort, "https://hooks.example.com:8443/other")).toBe(false);
  });

  it("matches paths at a '/' boundary, after resolving dot segments", () => {
    const api = list("https://h.example/api");
    expect(allowed(api, "https://h.example/api")).toBe(true);
    expect(allowed(api, "https://h.example/api/")).toBe(true);
    expect(allowed(api, "https://h.example/api/queue?x=1")).toBe(true);
    expect(allowed(api, "https://h.example/apiX")).toBe(false);
    expect(allowed(api, "https://h.example/ap")).toBe(false);
    expect(allowed(api, "https://h.example/")).toBe(false);
    expect(allowed(api, "https://h.example/api/../admin")).toBe(false);
    expect(allowed(api, "https://h.example/api/%2e%2e/admin")).toBe(false);
    expect(allowed(api, "https://h.example/api%2F..%2Fadmin")).toBe(false);
    expect(allowed(api, "https://h.example/API/x")).toBe(false);
    const slash = list("https://h.example/api/");
    expect(allowed(slash, "https://h.example/api/x")).toBe(true);
    expect(allowed(slash, "https://h.example/api")).toBe(false);
  });

  it("compares IPv6 hosts in their normalized form", () => {
    const v6 = list("http://[::1]:*", "http://[2001:db8::1]:8080/hooks");
    expect(allowed(v6, "http://[::1]:3000/")).toBe(true);
    expect(allowed(v6, "http://[0:0:0:0:0:0:0:1]/")).toBe(true);
    expect(allowed(v6, "http://[2001:DB8:0::1]:8080/hooks/a")).toBe(true);
    expect(allowed(v6, "http://[2001:db8::1]/hooks/a")).toBe(false);
    expect(allowed(v6, "http://[::2]/")).toBe(false);
  });

  it("refuses malformed entries", () => {
    for (const bad of [
      "localhost",
      "localhost:3000",
      "ftp://x",
      "file:///",
      "javascript:alert(1)",
      "http://",
      "http://user@host",
      "http://host?x=1",
      "http://host#x",
      "http://host/ path",
      "http://ho st",
      "http://host\r\n",
      "http://host:99999",
      "http://host:0",
      "http://host:",
      "http://host\\x",
      "*",
      "http://*.example.com",
      "http://host:**",
      "http://host:*3",
    ]) {
      expect(() => parsePushUrlPrefix(bad), bad).toThrow();
    }
  });
});

describe("VQS_PUSH_ALLOWED_URLS", () => {
  it("defaults to this machine in development and to off in production", () => {
    expect(loadConfig({}).pushAllowedUrls?.map((p) => p.text)).toEqual([
      "http://localhost:*",
      "http://127.0.0.1:*",
    ]);
    expect(loadConfig(production).pushAllowedUrls).toBeNull();
  });

  it("reads comma-separated prefixes", () => {
    const c = loadConfig({
      ...production,
      VQS_PUSH_ALLOWED_URLS: " http://app.apps.svc:3000/api/queue , https://hooks.example.com",
    });
    expect(c.pushAllowedUrls).toEqual([
      {
        text: "http://app.apps.svc:3000/api/queue",
        protocol: "http:",
        hostname: "app.apps.svc",
        port: 3000,
        path: "/api/queue",
      },
      {
        text: "https://hooks.example.com",
        protocol: "https:",
        hostname: "hooks.example.com",
        port: 443,
        path: "/",
      },
    ]);
  });

  it("stops the start on a malformed entry, naming the variable", () => {
    for (const bad of ["localhost:3000", "http://a,ftp://b", "http://u:p@h", "http://h/#x"]) {
      expect(() => loadConfig({ VQS_PUSH_ALLOWED_URLS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ VQS_PUSH_ALLOWED_URLS: bad })).toThrow(/VQS_PUSH_ALLOWED_URLS/);
    }
  });

  it("gives a namespace the global list, its team's and its team and project's, no other", () => {
    const c = loadConfig({
      ...production,
      VQS_PUSH_ALLOWED_URLS_TEAMS:
        "team_a=https://a.example.com/q, team_a/prj_1=http://a1.svc:3000, team_b=https://b.example.com, team_a=https://a2.example.com",
    });
    // No global list: none, not development's, once a tenant list is set.
    expect(c.pushAllowedUrls).toBeNull();
    const d = new PushDestinations(c.pushAllowedUrls, c.pushAllowedUrlsTenants);
    const texts = (team: string, project: string) =>
      d.prefixesFor(makeNamespace(team, project, "production", null))?.map((p) => p.text);
    expect(texts("team_a", "prj_1")).toEqual([
      "https://a.example.com/q",
      "https://a2.example.com",
      "http://a1.svc:3000",
    ]);
    expect(texts("team_a", "prj_2")).toEqual(["https://a.example.com/q", "https://a2.example.com"]);
    expect(texts("team_b", "prj_1")).toEqual(["https://b.example.com"]);
    expect(texts("team_c", "prj_1")).toEqual([]);
    const dev = loadConfig({ VQS_PUSH_ALLOWED_URLS_TEAMS: "team_b=https://b.example.com" });
    expect(dev.pushAllowedUrls).toBeNull();
    const global = new PushDestinations(list("https://all.example.com"), c.pushAllowedUrlsTenants);
    expect(global.prefixesFor(makeNamespace("team_b", "p", "e", null))?.map((p) => p.text)).toEqual(
      ["https://all.example.com", "https://b.example.com"],
    );
    expect(new PushDestinations(null).prefixesFor(makeNamespace("a", "b", "c", null))).toBeNull();
  });

  it("stops the start on a malformed tenant entry or network", () => {
    for (const bad of [
      "https://b.example.com",
      "team_b=",
      "=https://b",
      "a/b/c=https://b",
      "team_b=localhost",
    ]) {
      expect(() => loadConfig({ VQS_PUSH_ALLOWED_URLS_TEAMS: bad }), bad).toThrow(
        /VQS_PUSH_ALLOWED_URLS_TEAMS/,
      );
    }
    for (const bad of ["10.0.0.0", "10.0.0.0/33", "::1/129", "localhost/8", "all"]) {
      expect(() => loadConfig({ VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: bad }), bad).toThrow(
        /VQS_PUSH_ALLOWED_PRIVATE_NETWORKS/,
      );
    }
    expect(loadConfig({}).pushAllowedPrivateNetworks).toEqual(["127.0.0.0/8", "::1/128"]);
    expect(loadConfig(production).pushAllowedPrivateNetworks).toEqual([]);
    expect(
      loadConfig({ VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: "none" }).pushAllowedPrivateNetworks,
    ).toEqual([]);
    expect(
      loadConfig({ VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: "10.0.0.0/8, fd00::/8" })
        .pushAllowedPrivateNetworks,
    ).toEqual(["10.0.0.0/8", "fd00::/8"]);
  });

  it("fixes the settings cap per namespace at 1000", () => {
    expect(loadConfig({}).maxSettingsPerNamespace).toBe(1000);
  });
});

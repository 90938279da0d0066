// The push allow-list: how VQS_PUSH_ALLOWED_URLS is read, and that its matching cannot be
// fooled by look-alike hosts, credentials, ports, paths or encodings.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.js";
import {
  isPushUrlAllowed,
  parsePushUrlPrefix,
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
  const dev = list("http://localhost", "http://127.0.0.1");

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

  it("matches the port only when the prefix names one (a default port counts)", () => {
    const ported = list("http://app.svc:3000", "https://hooks.example.com:443");
    expect(allowed(ported, "http://app.svc:3000/x")).toBe(true);
    expect(allowed(ported, "http://app.svc/x")).toBe(false);
    expect(allowed(ported, "http://app.svc:30000/x")).toBe(false);
    expect(allowed(ported, "https://hooks.example.com/x")).toBe(true);
    expect(allowed(ported, "https://hooks.example.com:443/x")).toBe(true);
    expect(allowed(ported, "https://hooks.example.com:8443/x")).toBe(false);
    const anyPort = list("https://hooks.example.com");
    expect(allowed(anyPort, "https://hooks.example.com:8443/x")).toBe(true);
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
    const v6 = list("http://[::1]", "http://[2001:db8::1]:8080/hooks");
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
    ]) {
      expect(() => parsePushUrlPrefix(bad), bad).toThrow();
    }
  });
});

describe("VQS_PUSH_ALLOWED_URLS", () => {
  it("defaults to this machine in development and to off in production", () => {
    expect(loadConfig({}).pushAllowedUrls?.map((p) => p.text)).toEqual([
      "http://localhost",
      "http://127.0.0.1",
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
        port: null,
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

  it("reads the settings cap per namespace", () => {
    expect(loadConfig({}).maxSettingsPerNamespace).toBe(1000);
    expect(loadConfig({ VQS_MAX_SETTINGS_PER_NAMESPACE: "0" }).maxSettingsPerNamespace).toBe(0);
    expect(() => loadConfig({ VQS_MAX_SETTINGS_PER_NAMESPACE: "-1" })).toThrow(ConfigError);
  });
});

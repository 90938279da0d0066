import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const oidc = {
  VQS_OIDC_JWKS_URL: "https://oidc.example/jwks",
  VQS_OIDC_ISSUER: "https://oidc.example/team",
  VQS_OIDC_AUDIENCE: "https://example/team",
};

describe("configuration", () => {
  it("has development defaults: embedded NATS and development auth", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: "0.0.0.0",
      natsServers: null,
      oidc: null,
      region: "dev1",
    });
    expect(c.tenantClaims).toEqual({
      team: "owner_id",
      project: "project_id",
      environment: "environment",
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it("reads every setting", () => {
    const c = loadConfig({
      ...oidc,
      PORT: "9000",
      HOST: "127.0.0.1",
      NATS_URL: "nats://a:4222, nats://b:4222",
      VQS_REGION: "iad1",
      VQS_RECEIPT_SECRET: "s".repeat(32),
      VQS_TENANT_CLAIMS: "team,proj,env",
      VQS_ALLOWED_TEAMS: "t1,t2",
      VQS_MAX_MESSAGE_BYTES: "2048",
      VQS_STREAM_REPLICAS: "3",
      VQS_RATE_LIMIT_PER_SECOND: "50",
      VQS_RATE_LIMIT_TEAMS: "team_big=500, team_small=5",
      VQS_MAX_TOPICS_PER_NAMESPACE: "0",
      VQS_TOPIC_IDLE_SECONDS: "3600",
      VQS_DEDUP_WINDOW_SECONDS: "300",
      VQS_MESSAGE_TTL: "off",
      VQS_LARGE_BODY_READ_WINDOW: "6",
    });
    expect(c.natsServers).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(c.oidc).toMatchObject({
      jwksUrl: oidc.VQS_OIDC_JWKS_URL,
      issuers: [oidc.VQS_OIDC_ISSUER],
    });
    expect(c.tenantClaims).toEqual({ team: "team", project: "proj", environment: "env" });
    expect([...(c.allowedTeams ?? [])]).toEqual(["t1", "t2"]);
    expect(c).toMatchObject({
      port: 9000,
      region: "iad1",
      maxMessageBytes: 2048,
      streamReplicas: 3,
      rateLimitPerSecond: 50,
      maxTopicsPerNamespace: 0,
      maxGroupsPerNamespace: 5000,
      topicIdleSeconds: 3600,
      dedupWindowSeconds: 300,
      messageTtl: "off",
      largeBodyWindow: 8,
      largeBodyReadWindow: 6,
    });
    // A download reads ahead half of what an upload keeps in flight unless told otherwise.
    expect(loadConfig({})).toMatchObject({ largeBodyWindow: 8, largeBodyReadWindow: 4 });
    expect([...c.rateLimitTeams]).toEqual([
      ["team_big", 500],
      ["team_small", 5],
    ]);
  });

  it("refuses production without OIDC, receipt secret and NATS_URL, naming each", () => {
    let message = "";
    try {
      loadConfig({ NODE_ENV: "production" });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain("VQS_OIDC_JWKS_URL");
    expect(message).toContain("VQS_RECEIPT_SECRET");
    expect(message).toContain("NATS_URL");
  });

  it("serves the web console in development, and in production only with VQS_CONSOLE=on", () => {
    const production = {
      ...oidc,
      NODE_ENV: "production",
      NATS_URL: "nats://a:4222",
      VQS_RECEIPT_SECRET: "s".repeat(32),
    };
    expect(loadConfig({}).console).toBe(true);
    expect(loadConfig({ VQS_CONSOLE: "off" }).console).toBe(false);
    expect(loadConfig(production).console).toBe(false);
    expect(loadConfig({ ...production, VQS_CONSOLE: "on" }).console).toBe(true);
  });

  it("fixes V8's heap growing factor at 300 % unless told otherwise (0: V8's own)", () => {
    expect(loadConfig({}).heapGrowingPercent).toBe(300);
    expect(loadConfig({ VQS_HEAP_GROWING_PERCENT: "0" }).heapGrowingPercent).toBe(0);
    expect(loadConfig({ VQS_HEAP_GROWING_PERCENT: "150" }).heapGrowingPercent).toBe(150);
  });

  it("serves the metrics on a port of their own, 9464 and the API's host unless told otherwise", () => {
    expect(loadConfig({})).toMatchObject({ port: 8080, metricsPort: 9464, metricsHost: "0.0.0.0" });
    expect(loadConfig({ HOST: "10.0.0.5" }).metricsHost).toBe("10.0.0.5");
    expect(
      loadConfig({ HOST: "0.0.0.0", VQS_METRICS_HOST: "127.0.0.1", VQS_METRICS_PORT: "9100" }),
    ).toMatchObject({ metricsHost: "127.0.0.1", metricsPort: 9100 });
    // Both ephemeral (tests) is no clash; the same fixed port is.
    expect(loadConfig({ PORT: "0", VQS_METRICS_PORT: "0" }).metricsPort).toBe(0);
    expect(() => loadConfig({ PORT: "9464" })).toThrow(/VQS_METRICS_PORT must differ from PORT/);
  });

  it("refuses malformed values with a clear message", () => {
    for (const env of [
      { PORT: "http" },
      { PORT: "70000" },
      { VQS_METRICS_PORT: "70000" },
      { PORT: "9100", VQS_METRICS_PORT: "9100" },
      { VQS_REGION: "US East" },
      { VQS_RECEIPT_SECRET: "short" },
      { VQS_OIDC_JWKS_URL: "https://x/jwks" },
      { ...oidc, VQS_OIDC_JWKS_URL: "ftp://x" },
      { VQS_TENANT_CLAIMS: "a,b" },
      { VQS_STREAM_REPLICAS: "0" },
      { VQS_RATE_LIMIT_TEAMS: "team_a:5" },
      { VQS_RATE_LIMIT_TEAMS: "team_a=-1" },
      { VQS_TOPIC_IDLE_SECONDS: "10" },
      { VQS_MESSAGE_TTL: "yes" },
      { VQS_CONSOLE: "true" },
      { VQS_LARGE_BODY_READ_WINDOW: "0" },
      { VQS_LARGE_BODY_READ_WINDOW: "65" },
      { VQS_HEAP_GROWING_PERCENT: "1001" },
      { VQS_HEAP_GROWING_PERCENT: "1.5" },
    ]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
    }
  });
});

import { describe, expect, it } from "vitest";
import { ConfigError, FIXED, loadConfig, settingWarnings, RETIRED } from "../../src/config.js";

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
      VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "50",
      VQS_RATE_LIMIT_TEAMS: "team_big=500, team_small=5",
      VQS_MAX_TOPICS_PER_NAMESPACE: "0",
      VQS_MAX_LARGE_UPLOADS: "3",
      VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE: "7",
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
      maxLargeStreams: 3,
      maxDelayedPublishesPerSecond: 7,
    });
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

  it("fixes what no operator sets, whatever the environment says", () => {
    const set = {
      VQS_HEAP_GROWING_PERCENT: "0",
      VQS_CONSUMER_ACK_WAIT_SECONDS: "1",
      VQS_MESSAGE_TTL: "off",
      VQS_LARGE_BODY_READ_WINDOW: "6",
      VQS_METRICS_HOST: "127.0.0.1",
      VQS_PUSH_ISSUER: "urn:other",
    };
    expect(loadConfig(set)).toEqual(loadConfig({}));
    expect(loadConfig({})).toMatchObject({
      ...(({ oidcClockToleranceSeconds: _, ...rest }) => rest)(FIXED),
      oidc: null,
      pushIssuer: "urn:vqs:dev1",
      metricsHost: "0.0.0.0",
    });
    // A download reads ahead half of what an upload keeps in flight; V8's old generation may
    // grow to four times the live heap.
    expect(FIXED).toMatchObject({ largeBodyWindow: 8, largeBodyReadWindow: 4 });
    expect(FIXED.heapGrowingPercent).toBe(300);
    expect(loadConfig(oidc).oidc?.clockToleranceSeconds).toBe(FIXED.oidcClockToleranceSeconds);
  });

  it("still reads a renamed setting's old name, with a warning, the new name winning", () => {
    const old = { VQS_MAX_LARGE_STREAMS: "4", VQS_MAX_DELAYED_PUBLISHES_PER_SECOND: "9" };
    expect(loadConfig(old)).toMatchObject({ maxLargeStreams: 4, maxDelayedPublishesPerSecond: 9 });
    expect(settingWarnings(old)).toEqual([
      "VQS_MAX_LARGE_STREAMS is renamed VQS_MAX_LARGE_UPLOADS; the old name stops working in the next release",
      "VQS_MAX_DELAYED_PUBLISHES_PER_SECOND is renamed VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE; the old name stops working in the next release",
    ]);
    const both = { ...old, VQS_MAX_LARGE_UPLOADS: "5" };
    expect(loadConfig(both).maxLargeStreams).toBe(5);
    expect(settingWarnings(both)[0]).toBe(
      "VQS_MAX_LARGE_STREAMS is ignored: VQS_MAX_LARGE_UPLOADS, its new name, is set",
    );
    expect(settingWarnings({ VQS_MAX_LARGE_UPLOADS: "5" })).toEqual([]);
    expect(() => loadConfig({ VQS_MAX_LARGE_STREAMS: "0" })).toThrow(/VQS_MAX_LARGE_STREAMS must/);
  });

  it("reads the per-tenant rate limits under their old names too, with a warning", () => {
    const old = { VQS_RATE_LIMIT_PER_SECOND: "7", VQS_RATE_LIMIT_BYTES_PER_SECOND: "1000" };
    expect(loadConfig(old)).toMatchObject({ rateLimitPerSecond: 7, rateLimitBytesPerSecond: 1000 });
    expect(settingWarnings(old)).toEqual([
      "VQS_RATE_LIMIT_PER_SECOND is renamed VQS_RATE_LIMIT_PER_SECOND_PER_TENANT; the old name stops working in the next release",
      "VQS_RATE_LIMIT_BYTES_PER_SECOND is renamed VQS_RATE_LIMIT_BYTES_PER_SECOND_PER_TENANT; the old name stops working in the next release",
    ]);
    const both = { ...old, VQS_RATE_LIMIT_PER_SECOND_PER_TENANT: "8" };
    expect(loadConfig(both).rateLimitPerSecond).toBe(8);
  });

  it("reads per-tenant overrides from VQS_TENANT_OVERRIDES, and the three variables it folds, with a warning", () => {
    const c = loadConfig({
      VQS_TENANT_OVERRIDES:
        "team_a:rate=500, team_a:bytes=1073741824, team_a/prj_1:push=http://a1.svc:3000, team_a:push=https://a.example.com",
    });
    expect([...c.rateLimitTeams]).toEqual([["team_a", 500]]);
    expect([...c.namespaceMaxBytesTeams]).toEqual([["team_a", 1073741824]]);
    expect([...c.pushAllowedUrlsTenants].map(([t, ps]) => [t, ps.map((p) => p.text)])).toEqual([
      ["team_a/prj_1", ["http://a1.svc:3000"]],
      ["team_a", ["https://a.example.com"]],
    ]);
    const old = {
      VQS_RATE_LIMIT_TEAMS: "team_a=5,team_b=6",
      VQS_NAMESPACE_MAX_BYTES_TEAMS: "team_a=7",
      VQS_PUSH_ALLOWED_URLS_TEAMS: "team_a=https://old.example.com",
    };
    // The old entries first, the new variable's after: a number set twice takes the new one,
    // push prefixes add up.
    const both = loadConfig({
      ...old,
      VQS_TENANT_OVERRIDES: "team_a:rate=50,team_a:push=https://new.example.com",
    });
    expect([...both.rateLimitTeams]).toEqual([
      ["team_a", 50],
      ["team_b", 6],
    ]);
    expect([...both.namespaceMaxBytesTeams]).toEqual([["team_a", 7]]);
    expect(both.pushAllowedUrlsTenants.get("team_a")?.map((p) => p.text)).toEqual([
      "https://old.example.com",
      "https://new.example.com",
    ]);
    expect(settingWarnings(old)).toEqual([
      "VQS_RATE_LIMIT_TEAMS is folded into VQS_TENANT_OVERRIDES (its entries team_id=value become team_id:rate=value); the old name stops working in the next release",
      "VQS_NAMESPACE_MAX_BYTES_TEAMS is folded into VQS_TENANT_OVERRIDES (its entries team_id=value become team_id:bytes=value); the old name stops working in the next release",
      "VQS_PUSH_ALLOWED_URLS_TEAMS is folded into VQS_TENANT_OVERRIDES (its entries team_id=value become team_id:push=value); the old name stops working in the next release",
    ]);
    for (const bad of [
      "team_a=5",
      "team_a:speed=5",
      "team_a/prj_1:rate=5",
      "team_a:rate=-1",
      "team_a:rate=12345678",
      "team_a:bytes=1e9",
      "a/b/c:push=https://x.example.com",
      "team_a:push=localhost",
    ]) {
      expect(() => loadConfig({ VQS_TENANT_OVERRIDES: bad }), bad).toThrow(/VQS_TENANT_OVERRIDES/);
    }
  });

  it("warns of a retired variable set, and ignores it (its value is fixed)", () => {
    const env = { VQS_CONSUMER_ACK_WAIT_SECONDS: "1", VQS_MESSAGE_TTL: "off" };
    expect(loadConfig(env).consumerAckWaitSeconds).toBe(FIXED.consumerAckWaitSeconds);
    expect(settingWarnings(env)).toEqual([
      "VQS_CONSUMER_ACK_WAIT_SECONDS is no longer read: its value is fixed (docs/configuration.md)",
      "VQS_MESSAGE_TTL is no longer read: its value is fixed (docs/configuration.md)",
    ]);
    // A retired name something else replaces says what.
    expect(settingWarnings({ VQS_OPERATOR_CLAIM: "vqs_operator", VQS_DATA_DIR: "/tmp/x" })).toEqual(
      [
        "VQS_DATA_DIR is no longer read: development's data directory is `--data-dir` of npm start and npm run token (docs/configuration.md)",
        "VQS_OPERATOR_CLAIM is no longer read: operators are the teams in VQS_OPERATOR_TEAMS (docs/configuration.md)",
      ],
    );
    // Every retired name is one loadConfig no longer reads.
    for (const name of RETIRED) {
      expect(loadConfig({ [name]: "not a value" })).toEqual(loadConfig({}));
    }
  });

  it("serves the metrics on a port of their own, 9464 unless told otherwise, on the API's host", () => {
    expect(loadConfig({})).toMatchObject({ port: 8080, metricsPort: 9464, metricsHost: "0.0.0.0" });
    expect(loadConfig({ HOST: "10.0.0.5" }).metricsHost).toBe("10.0.0.5");
    expect(loadConfig({ HOST: "127.0.0.1", VQS_METRICS_PORT: "9100" })).toMatchObject({
      metricsHost: "127.0.0.1",
      metricsPort: 9100,
    });
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
      { VQS_NAMESPACE_MAX_BYTES_TEAMS: "team_a" },
      { VQS_CONSOLE: "true" },
      { VQS_MAX_LARGE_UPLOADS: "0" },
      { VQS_MAX_DELAYED_PUBLISHES_PER_SECOND_PER_NAMESPACE: "-1" },
    ]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
    }
  });
});

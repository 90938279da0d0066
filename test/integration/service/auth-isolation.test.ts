// Authentication (JWTs against a JWKS served over HTTP) and namespace isolation: team, project,
// environment and deployment each make a separate world.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, parts, uniqueName } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer);
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

async function status(token: string | null, path = uniqueName()) {
  const res = await fetch(`${gw.url}/api/v3/topic/${path}`, {
    method: "POST",
    headers: token === null ? {} : { authorization: token },
    body: "x",
  });
  return { status: res.status, code: await errorCode(res) };
}

describe("authentication", () => {
  it("accepts a valid token", async () => {
    const res = await api(gw.url, await issuer.token()).publish(uniqueName(), "x");
    expect(res.status).toBe(201);
  });

  it("answers 401 for a missing, malformed, expired, foreign or mis-addressed token", async () => {
    const good = await issuer.token();
    expect(await status(null)).toEqual({ status: 401, code: "missing_token" });
    expect(await status(`Basic ${good}`)).toEqual({ status: 401, code: "invalid_token" });
    expect(await status("Bearer not.a.jwt")).toEqual({ status: 401, code: "invalid_token" });
    expect(await status(`Bearer ${good}x`)).toEqual({ status: 401, code: "invalid_token" });
    const bad = [
      await issuer.token({}, { expiresIn: "-2m" }),
      await issuer.token({}, { issuer: "https://evil.example" }),
      await issuer.token({}, { audience: "https://other.example" }),
      await issuer.foreignToken(),
      await issuer.token({ owner_id: undefined }),
      await issuer.token({ environment: 42 }),
    ];
    for (const t of bad)
      expect(await status(`Bearer ${t}`)).toEqual({ status: 401, code: "invalid_token" });
  });

  it("answers 503, not 401, when the issuer's keys cannot be fetched", async () => {
    const fresh = await startGateway(nats.url, issuer);
    try {
      issuer.setDown(true);
      const res = await api(fresh.url, await issuer.token()).publish(uniqueName(), "x");
      expect(res.status).toBe(503);
      expect(await errorCode(res)).toBe("auth_unavailable");
    } finally {
      issuer.setDown(false);
      await fresh.close();
    }
  });

  it("answers 403 for a valid token of a tenant this deployment does not serve", async () => {
    const limited = await startGateway(nats.url, issuer, {
      env: {
        VQS_ALLOWED_TEAMS: "team_a",
        VQS_ALLOWED_ENVIRONMENTS: "production,preview",
      },
    });
    try {
      const ok = await api(limited.url, await issuer.token()).publish(uniqueName(), "x");
      expect(ok.status).toBe(201);
      for (const claims of [{ owner_id: "team_b" }, { environment: "development" }]) {
        const res = await api(limited.url, await issuer.token(claims)).publish(uniqueName(), "x");
        expect(res.status).toBe(403);
        expect(await errorCode(res)).toBe("tenant_not_allowed");
      }
    } finally {
      await limited.close();
    }
  });

  it("needs no token for health checks", async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });
});

describe("isolation", () => {
  it("keeps every team, project, environment and deployment apart, even with equal names", async () => {
    const topic = uniqueName("shared-name");
    const home = api(gw.url, await issuer.token());
    expect((await home.publish(topic, "home")).status).toBe(201);
    const others = [
      api(gw.url, await issuer.token({ owner_id: "team_b" })),
      api(gw.url, await issuer.token({ project_id: "prj_2" })),
      api(gw.url, await issuer.token({ environment: "preview" })),
      api(gw.url, await issuer.token(), { "vqs-deployment-id": "dpl_123" }),
    ];
    for (const other of others) {
      expect((await other.receive(topic, "g")).status).toBe(204);
      expect((await other.publish(topic, "other")).status).toBe(201);
    }
    const mine = await parts(await home.receive(topic, "g", { "vqs-max-messages": "10" }));
    expect(mine.map((p) => p.body.toString())).toEqual(["home"]);
    for (const other of others) {
      const theirs = await parts(await other.receive(topic, "g", { "vqs-max-messages": "10" }));
      expect(theirs.map((p) => p.body.toString())).toEqual(["other"]);
    }
  });

  it("does not let one namespace read another's message by ID", async () => {
    const topic = uniqueName();
    const home = api(gw.url, await issuer.token());
    const res = await home.publish(topic, "secret");
    const { messageId } = (await res.json()) as { messageId: string };
    const other = api(gw.url, await issuer.token({ owner_id: "team_b" }));
    // The other tenant publishes to the same topic name, so its stream has the same sequence.
    await other.publish(topic, "decoy");
    expect((await other.receiveById(topic, "g", messageId)).status).toBe(404);
    const deployment = api(gw.url, await issuer.token(), { "vqs-deployment-id": "dpl_9" });
    expect((await deployment.receiveById(topic, "g", messageId)).status).toBe(404);
  });

  it("keeps idempotency keys per namespace", async () => {
    const topic = uniqueName();
    const a = api(gw.url, await issuer.token());
    const b = api(gw.url, await issuer.token({ project_id: "prj_2" }));
    await a.publish(topic, "a", { "vqs-idempotency-key": "same" });
    await b.publish(topic, "b", { "vqs-idempotency-key": "same" });
    expect((await parts(await b.receive(topic, "g"))).map((p) => p.body.toString())).toEqual(["b"]);
  });
});

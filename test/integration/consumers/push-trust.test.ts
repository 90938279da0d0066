// Pushes that apps can trust, against a real nats-server, real gateways and a real HTTP app
// whose routes are `@vercel/queue`'s handleCallback: a tenant may push only inside the global
// allow-list and its own tenant's (never into another tenant's), an entry without a port
// allows only its scheme's, a name that resolves to loopback is not pushed to unless the
// operator allows loopback, push health says what failed without saying what answered, and the
// shipped verifier accepts a real push while its wrapper answers 401 to a push without a token,
// with a forged, expired or foreign-issuer token, or from another tenant's group.
import { SignJWT, generateKeyPair } from "jose";
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPushVerifier,
  verifiedPushHandler,
  type PushVerifier,
} from "../../../push-verifier/index.mjs";
import { freePort } from "../../../src/dev/nats-server-process.js";
import { PushSigningKeys } from "../../../src/outbound/push-signer.js";
import { useGateways } from "../../helpers/fixture.js";
import { RECEIPT_SECRET, startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";
import { startPushApp, type PushApp } from "../../helpers/push-app.js";

const ISSUER = "urn:vqs:iad1";
const NS_B = "team_b/prj_1/production";
// Nats and the issuer; the gateway starts once the app's port is known (its allow-lists name it).
const fx = useGateways(0);
let gw: TestGateway;
let app: PushApp;
let appPort: number;
let closedPort: number;
let banner: TcpServer;
let bannerPort: number;
const bannerSockets = new Set<Socket>();
let tokenA: string;
let tokenB: string;
let env: Record<string, string>;

beforeAll(async () => {
  tokenA = await fx.issuer.token({ sub: "alice" });
  tokenB = await fx.issuer.token({ owner_id: "team_b", sub: "bob" });
  app = await startPushApp(() => gw.url, tokenB);
  appPort = Number(new URL(app.url).port);
  closedPort = await freePort();
  // Something that listens but speaks no HTTP, and says what it is.
  banner = createTcpServer((socket) => {
    bannerSockets.add(socket);
    socket.on("close", () => bannerSockets.delete(socket));
    socket.on("error", () => undefined);
    socket.end("SSH-2.0-OpenSSH_9.6 internal-banner\r\n");
  });
  await new Promise<void>((r) => banner.listen(0, "127.0.0.1", r));
  bannerPort = (banner.address() as { port: number }).port;
  env = {
    // Every tenant: a port-less entry, and one shared route of the app.
    VQS_PUSH_ALLOWED_URLS: `http://hooks.global.test/q,http://127.0.0.1:${appPort}/fetch/shared`,
    // Team B only: the app (by address and by name), a closed port, the banner.
    VQS_TENANT_OVERRIDES: [
      `team_b:push=http://127.0.0.1:${appPort}`,
      `team_b:push=http://localhost:${appPort}`,
      `team_b/prj_1:push=http://127.0.0.1:${closedPort}`,
      `team_b/prj_1:push=http://127.0.0.1:${bannerPort}`,
    ].join(","),
    // Names may resolve to no private address at all, loopback included.
    VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: "none",
  };
  gw = await startGateway(fx.nats.url, fx.issuer, { env });
});

afterAll(async () => {
  await gw?.close();
  await app?.close();
  // Its half-closed sockets would hold the server open.
  for (const s of bannerSockets) s.destroy();
  await new Promise<void>((r) => (banner ? banner.close(() => r()) : r()));
});

const json = { "content-type": "application/json" };

async function putPush(token: string, topic: string, group: string, url: string) {
  return api(gw.url, token).call("PUT", `${topic}/consumer/${group}/settings`, {
    headers: json,
    body: JSON.stringify({ push: { url } }),
  });
}

async function publish(token: string, topic: string, body: unknown): Promise<void> {
  const res = await api(gw.url, token).publish(topic, JSON.stringify(body), json);
  expect(res.status).toBe(201);
}

/** The group's push health as the management API shows it to its tenant. */
async function pushHealth(token: string, topic: string, group: string) {
  await gw.gateway.jetstream.pushHealth.flush();
  const res = await fetch(`${gw.url}/api/v3/topic/${topic}/consumers`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await res.json()) as {
    consumerGroups: { name: string; pushHealth: Record<string, unknown> | null }[];
  };
  return body.consumerGroups.find((g) => g.name === group)?.pushHealth ?? null;
}

const requestsTo = (path: string) => app.requests.filter((r) => r.path === path);

describe("allow-lists per tenant", () => {
  it("refuses a push URL that only another tenant's list allows", async () => {
    const topic = uniqueName("b-only");
    const url = `http://127.0.0.1:${appPort}/hook/${topic}`;
    const refused = await putPush(tokenA, topic, "g", url);
    expect([refused.status, await errorCode(refused)]).toEqual([
      403,
      "push_destination_not_allowed",
    ]);
    // Nothing stored for A; B may.
    expect((await api(gw.url, tokenA).call("GET", `${topic}/consumer/g/settings`)).status).toBe(
      404,
    );
    expect((await putPush(tokenB, topic, "g", url)).status).toBe(200);
    // A project-level entry is B's prj_1 only.
    const otherProject = await fx.issuer.token({ owner_id: "team_b", project_id: "prj_2" });
    const closed = await putPush(otherProject, topic, "g", `http://127.0.0.1:${closedPort}/x`);
    expect([closed.status, await errorCode(closed)]).toEqual([403, "push_destination_not_allowed"]);
    expect((await putPush(tokenB, topic, "h", `http://127.0.0.1:${closedPort}/x`)).status).toBe(
      200,
    );
  });

  it("a port-less entry allows its scheme's port only", async () => {
    const topic = uniqueName("portless");
    for (const [url, status] of [
      ["http://hooks.global.test/q/x", 200],
      ["http://hooks.global.test:80/q/x", 200],
      ["http://hooks.global.test:8080/q/x", 403],
      ["http://hooks.global.test:22/q/x", 403],
    ] as const) {
      const res = await putPush(tokenA, topic, "g", url);
      expect(res.status, url).toBe(status);
    }
  });
});

describe("resolved addresses", () => {
  it("does not push to a name that resolves to loopback, and says so in push health", async () => {
    const topic = uniqueName("to-localhost");
    app.hookRoute(topic, 200);
    const url = `http://localhost:${appPort}/hook/${topic}`;
    expect((await putPush(tokenB, topic, "g", url)).status).toBe(200);
    await publish(tokenB, topic, { n: 1 });
    await expect
      .poll(() => pushHealth(tokenB, topic, "g"), { timeout: 20_000, interval: 250 })
      .toMatchObject({ lastFailure: "destination_not_allowed", lastSuccessAt: null });
    expect(requestsTo(`/hook/${topic}`)).toEqual([]);
  });

  it("pushes to a name that resolves to loopback when the operator allows loopback", async () => {
    // A region of its own: every gateway of a region pushes every pushed group.
    const nats: TestNats = await startTestNats();
    const allowing = await startGateway(nats.url, fx.issuer, {
      env: { ...env, VQS_PUSH_ALLOWED_PRIVATE_NETWORKS: "127.0.0.0/8,::1/128" },
    });
    try {
      const topic = uniqueName("to-localhost-allowed");
      app.hookRoute(topic, 200);
      const url = `http://localhost:${appPort}/hook/${topic}`;
      const put = await api(allowing.url, tokenB).call("PUT", `${topic}/consumer/g/settings`, {
        headers: json,
        body: JSON.stringify({ push: { url } }),
      });
      expect(put.status).toBe(200);
      const res = await api(allowing.url, tokenB).publish(topic, "{}", json);
      expect(res.status).toBe(201);
      await expect
        .poll(() => requestsTo(`/hook/${topic}`).length, { timeout: 20_000, interval: 100 })
        .toBeGreaterThanOrEqual(1);
    } finally {
      await allowing.close();
      await nats.dispose();
    }
  });
});

describe("push health", () => {
  it("names the step that failed, never the status, answer or address", async () => {
    const failing = uniqueName("fails-5xx");
    app.hookRoute(failing, 503);
    const cases = [
      { topic: failing, url: `http://127.0.0.1:${appPort}/hook/${failing}`, want: "http_5xx" },
      // Nothing listens, and something that is not HTTP answers: the same word.
      {
        topic: uniqueName("closed"),
        url: `http://127.0.0.1:${closedPort}/q`,
        want: "connect_failed",
      },
      {
        topic: uniqueName("banner"),
        url: `http://127.0.0.1:${bannerPort}/q`,
        want: "connect_failed",
      },
    ];
    for (const c of cases) {
      expect((await putPush(tokenB, c.topic, "g", c.url)).status).toBe(200);
      await publish(tokenB, c.topic, { n: 1 });
    }
    for (const c of cases) {
      await expect
        .poll(async () => (await pushHealth(tokenB, c.topic, "g"))?.lastFailure ?? null, {
          timeout: 20_000,
          interval: 250,
        })
        .toBe(c.want);
      const text = JSON.stringify(await pushHealth(tokenB, c.topic, "g"));
      for (const leak of [
        "503",
        "SSH",
        "banner",
        "127.0.0.1",
        String(closedPort),
        String(bannerPort),
      ]) {
        expect(text).not.toContain(leak);
      }
    }
  });
});

describe("the push verifier", () => {
  const verifier = (): PushVerifier =>
    createPushVerifier({ gatewayUrl: gw.url, issuer: ISSUER, namespace: NS_B });

  /** B's shared route, verified; what its handler got. */
  function verifiedRoute() {
    const got: unknown[] = [];
    const url = app.fetchRoute("shared", {
      handler: (payload) => void got.push(payload),
      wrap: (handle) => verifiedPushHandler(handle, verifier()),
    });
    return { url, got };
  }

  it("accepts a real push, and answers 401 to another tenant's push at the same URL", async () => {
    const { url, got } = verifiedRoute();
    const topicB = uniqueName("verified");
    expect((await putPush(tokenB, topicB, "g", url)).status).toBe(200);
    await publish(tokenB, topicB, { from: "b" });
    await expect.poll(() => got, { timeout: 20_000, interval: 100 }).toEqual([{ from: "b" }]);
    // A may point a group at the shared URL (the global list has it), but its pushes, signed
    // by the gateway for A's namespace, are refused by B's verifier.
    const topicA = uniqueName("foreign");
    expect((await putPush(tokenA, topicA, "g", url)).status).toBe(200);
    await publish(tokenA, topicA, { from: "a" });
    await expect
      .poll(() => app.requests.filter((r) => r.headers["ce-vqsqueuename"] === topicA).length, {
        timeout: 20_000,
        interval: 100,
      })
      .toBeGreaterThanOrEqual(1);
    await expect
      .poll(async () => (await pushHealth(tokenA, topicA, "g"))?.lastFailure ?? null, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe("http_4xx");
    expect(got).toEqual([{ from: "b" }]);
  });

  it("answers 401 to a push without a token, or with a forged, expired or foreign token", async () => {
    const { url, got } = verifiedRoute();
    const topic = uniqueName("forged");
    const headers = {
      "ce-specversion": "1.0",
      "ce-type": "com.vercel.queue.v2beta",
      "ce-id": "1",
      "ce-source": `/vqs/iad1/topics/${topic}`,
      "ce-vqsqueuename": topic,
      "ce-vqsconsumergroup": "g",
      "ce-vqsmessageid": "0-1",
      "ce-vqsdeliverycount": "1",
      "ce-vqscreatedat": new Date().toISOString(),
      "ce-vqsexpiresat": new Date(Date.now() + 60_000).toISOString(),
      "ce-vqsreceipthandle": "forged",
      "ce-vqsvisibilitydeadline": new Date(Date.now() + 60_000).toISOString(),
      "content-type": "application/json",
    };
    const sub = (ns: string, t = topic) => `${ns}/${encodeURIComponent(t)}/g`;
    const gatewayKeys = (o: { now?: number; issuer?: string } = {}) =>
      new PushSigningKeys({
        secret: RECEIPT_SECRET,
        region: "iad1",
        keyIds: ["v1"],
        issuer: o.issuer ?? ISSUER,
        lifetimeSeconds: 60,
        ...(o.now !== undefined ? { now: () => o.now! } : {}),
      });
    const own = await gatewayKeys().sign(url, sub(`${NS_B}/`));
    // Signed by the gateway's key: the verifier's own check of this case is right.
    const post = (authorization?: string) =>
      fetch(url, {
        method: "POST",
        headers: { ...headers, ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ forged: true }),
      });
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: "v1", typ: "JWT" })
      .setIssuer(ISSUER)
      .setAudience(url)
      .setSubject(sub(`${NS_B}/`))
      .setIssuedAt()
      .setExpirationTime("1m")
      .sign(privateKey);
    const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(
      JSON.stringify({ iss: ISSUER, aud: url, sub: sub(`${NS_B}/`), exp: 9e9 }),
    ).toString("base64url")}.`;
    const refusals = {
      none: undefined,
      garbage: "Bearer not-a-jwt",
      unsigned: `Bearer ${unsigned}`,
      forged: `Bearer ${forged}`,
      expired: `Bearer ${await gatewayKeys({ now: Date.now() - 120_000 }).sign(url, sub(`${NS_B}/`))}`,
      foreignIssuer: `Bearer ${await gatewayKeys({ issuer: "urn:vqs:sfo1" }).sign(url, sub(`${NS_B}/`))}`,
      otherAudience: `Bearer ${await gatewayKeys().sign(`${url}/x`, sub(`${NS_B}/`))}`,
      otherNamespace: `Bearer ${await gatewayKeys().sign(url, sub("team_a/prj_1/production/"))}`,
      otherTopic: `Bearer ${await gatewayKeys().sign(url, sub(`${NS_B}/`, "another"))}`,
    };
    for (const [name, authorization] of Object.entries(refusals)) {
      const res = await post(authorization);
      expect(res.status, name).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code, name).toBe(
        "push_not_verified",
      );
    }
    expect(got).toEqual([]);
    // The same request with the gateway's own token reaches the handler (the client then
    // finds the forged receipt handle is not one, which is its own business).
    expect((await post(`Bearer ${own}`)).status).not.toBe(401);
    await expect.poll(() => got.length, { timeout: 5000 }).toBe(1);
  });
});

// The auth hook remembers the namespace of a header pair until the token expires; these tests
// drive it with a verifier whose answers and clock they control.
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import type { TokenVerifier, VerifiedToken } from "../../src/auth/token-verifier.js";
import { AppError } from "../../src/errors.js";
import { installErrorHandling } from "../../src/http/error-handler.js";
import { installAuth } from "../../src/http/plugins/auth.js";

interface Harness {
  readonly app: FastifyInstance;
  readonly calls: string[];
  clock: number;
  answer: (token: string) => VerifiedToken;
}

function harness(allowedTeams: ReadonlySet<string> | null = null): Harness {
  const app = Fastify();
  const h: Harness = {
    app,
    calls: [],
    clock: 1_000_000,
    answer: () => ({
      tenant: {
        team: "team_a",
        project: "p",
        environment: "production",
        subject: null,
      },
      expiresAtMs: 1_060_000,
    }),
  };
  const verifier: TokenVerifier = {
    verify: (token) => {
      h.calls.push(token);
      return Promise.resolve(h.answer(token));
    },
  };
  installErrorHandling(app);
  installAuth(app, {
    verifier,
    config: {
      allowedTeams,
      allowedProjects: null,
      allowedEnvironments: null,
      operatorTeams: new Set<string>(),
    },
    now: () => h.clock,
    cacheSize: 3,
  });
  const seen = new Map<string, unknown>();
  app.get("/ns", (request, reply) => {
    // The identity of the object tells a remembered namespace from a rebuilt one.
    const k = request.namespace.key;
    if (!seen.has(k)) seen.set(k, request.namespace);
    return reply.send({ key: k, same: seen.get(k) === request.namespace });
  });
  return h;
}

async function get(h: Harness, headers: Record<string, string>) {
  const res = await h.app.inject({ method: "GET", url: "/ns", headers });
  return { status: res.statusCode, body: res.json<Record<string, unknown>>() };
}

describe("auth hook cache", () => {
  let h: Harness | null = null;
  afterEach(async () => {
    await h?.app.close();
    h = null;
  });

  it("verifies a header pair once and serves the same namespace until the token expires", async () => {
    h = harness();
    const auth = { authorization: "Bearer tok1" };
    const first = await get(h, auth);
    const second = await get(h, auth);
    expect(first.status).toBe(200);
    expect(second.body).toEqual({ key: first.body.key, same: true });
    expect(h.calls).toEqual(["tok1"]);

    // At the expiry the full check runs again, and its answer counts.
    h.clock = 1_060_000;
    h.answer = () => {
      throw new AppError("invalid_token");
    };
    const expired = await get(h, auth);
    expect(expired.status).toBe(401);
    expect(expired.body).toMatchObject({ error: { code: "invalid_token" } });
    expect(h.calls).toEqual(["tok1", "tok1"]);
    expect((await get(h, auth)).status).toBe(401); // a failure is never remembered
  });

  it("keeps deployments apart and never remembers a rejected header", async () => {
    h = harness();
    const plain = await get(h, { authorization: "Bearer tok1" });
    const dep = await get(h, { authorization: "Bearer tok1", "vqs-deployment-id": "dpl_1" });
    expect(dep.body.key).not.toBe(plain.body.key);
    expect(String(dep.body.key)).toContain("dpl_1");
    for (let i = 0; i < 2; i++) {
      const bad = await get(h, { authorization: "Bearer tok1", "vqs-deployment-id": "a b" });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: { code: "invalid_deployment_id" } });
    }
    expect(h.calls).toEqual(["tok1", "tok1", "tok1", "tok1"]);
    expect((await get(h, { authorization: "Basic tok1" })).status).toBe(401);
    expect((await get(h, {})).body).toMatchObject({ error: { code: "missing_token" } });
  });

  it("checks the tenant allow-list on every full check and is bounded", async () => {
    h = harness(new Set(["team_a"]));
    h.answer = (token) => ({
      tenant: { team: token, project: "p", environment: "e", subject: null },
      expiresAtMs: 2_000_000,
    });
    const other = await get(h, { authorization: "Bearer team_b" });
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ error: { code: "tenant_not_allowed" } });
    expect((await get(h, { authorization: "Bearer team_b" })).status).toBe(403);
    expect(h.calls).toEqual(["team_b", "team_b"]);

    // Four allowed header pairs through a cache of three: the oldest is verified again.
    h.calls.length = 0;
    h.answer = () => ({
      tenant: {
        team: "team_a",
        project: "p",
        environment: "e",
        subject: null,
      },
      expiresAtMs: 2_000_000,
    });
    for (const d of ["d1", "d2", "d3", "d4", "d4", "d1"]) {
      expect((await get(h, { authorization: "Bearer t", "vqs-deployment-id": d })).status).toBe(
        200,
      );
    }
    expect(h.calls).toHaveLength(5);
  });
});

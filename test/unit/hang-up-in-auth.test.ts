// A client that hangs up while its request is being authenticated (before preParsing) leaves no
// request in flight of its namespace counted (namespace-caps.ts): its response's 'close' came
// before the hook ran, so the hook must not wait for one. A real Fastify server on loopback, a real client that goes.
import Fastify, { type FastifyInstance } from "fastify";
import { request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installNamespaceCaps } from "../../src/http/plugins/namespace-caps.js";
import { NamespaceCounts } from "../../src/queue/admission/in-flight/namespace-counts.js";
import { makeNamespace } from "../../src/queue/namespace.js";
import { eventually } from "../helpers/wait.js";

const TEXT = { "content-type": "text/plain" };
const namespace = makeNamespace("team_a", "prj_gone", "production", null);
const counts = new NamespaceCounts(10);
let app: FastifyInstance;
let authenticating: (() => void)[] = [];
let lastResponse: ServerResponse | null = null;

beforeAll(async () => {
  app = Fastify();
  app.addHook("onRequest", async (req, reply) => {
    lastResponse = reply.raw;
    await new Promise<void>((resolve) => authenticating.push(resolve));
    Object.assign(req, { namespace });
  });
  installNamespaceCaps(app, counts);
  app.post("/api/v3/topic/:topic", () => "ok");
  await app.listen({ port: 0, host: "127.0.0.1" });
});

afterAll(() => app.close());

describe("a client gone during authentication", () => {
  it("leaves no request in flight counted", async () => {
    const { port } = app.server.address() as AddressInfo;
    const client = request({ port, method: "POST", path: "/api/v3/topic/t", headers: TEXT });
    client.on("error", () => {});
    client.end("x");
    expect(await eventually(() => authenticating.length === 1)).toBe(true);
    client.destroy();
    expect(await eventually(() => lastResponse?.closed === true)).toBe(true);
    authenticating.forEach((go) => go());
    authenticating = [];
    expect(await eventually(() => counts.count(namespace.key) === 0)).toBe(true);
    // And a later request of the same namespace is answered.
    const answered = new Promise<number>((resolve) =>
      request({ port, method: "POST", path: "/api/v3/topic/t", headers: TEXT }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).end("y"),
    );
    expect(await eventually(() => authenticating.length === 1)).toBe(true);
    authenticating.forEach((go) => go());
    expect(await answered).toBe(200);
  });
});

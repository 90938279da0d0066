// The gateway's thread shared among tenants (src/http/plugins/request-share.ts): a tenant's
// flood of small publishes keeps only its share of requests past preParsing, and another
// tenant's request is taken at once rather than behind the flood. A real Fastify app, requests
// through inject; the routes hold each request until the test lets them go.
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { installRequestShare } from "../../src/http/plugins/request-share.js";
import { FairShare, type FairShareBounds } from "../../src/queue/admission/in-flight/fair-share.js";
import { makeNamespace } from "../../src/queue/namespace.js";
import { eventually } from "../helpers/wait.js";

const BOUNDS: FairShareBounds = { total: 64, perTenant: 4, alone: 32 };

let app: FastifyInstance;
/** Requests inside their handler now, per project. */
let atWork: Map<string, number>;
let release: () => void;
let released: Promise<void>;

beforeEach(async () => {
  atWork = new Map();
  released = new Promise((resolve) => (release = resolve));
  app = Fastify();
  app.addHook("onRequest", (request, _reply, done) => {
    const project = String(request.headers["x-project"]);
    Object.assign(request, { namespace: makeNamespace("team_a", project, "production", null) });
    done();
  });
  let clock = 0;
  installRequestShare(app, new FairShare(() => ++clock, BOUNDS));
  const held = async (project: string) => {
    atWork.set(project, (atWork.get(project) ?? 0) + 1);
    await released;
    atWork.set(project, atWork.get(project)! - 1);
    return "ok";
  };
  app.post("/api/v3/topic/:topic", (request) => held(String(request.headers["x-project"])));
  app.get("/api/v3/topics", (request) => held(String(request.headers["x-project"])));
  await app.ready();
});

afterEach(async () => {
  release();
  await app.close();
});

const waitFor = async (probe: () => boolean) => expect(await eventually(probe, 5000, 2)).toBe(true);

const publish = (project: string, body = "x") =>
  app.inject({
    method: "POST",
    url: "/api/v3/topic/t",
    headers: { "x-project": project, "content-type": "text/plain" },
    payload: body,
  });

describe("the gateway's thread shared among tenants", () => {
  it("keeps a flood to its share once another tenant is at work, and takes the other at once", async () => {
    const flood = Array.from({ length: 50 }, () => publish("flood"));
    // Alone, the flood may have `alone` at work.
    await waitFor(() => atWork.get("flood") === BOUNDS.alone);
    const quiet = publish("quiet");
    await waitFor(() => atWork.get("quiet") === 1);
    const listing = app.inject({ url: "/api/v3/topics", headers: { "x-project": "quiet" } });
    await waitFor(() => atWork.get("quiet") === 2);
    // Nothing of the flood past preParsing was taken since; none of its waiting is refused.
    expect(atWork.get("flood")).toBe(BOUNDS.alone);
    release();
    const answers = await Promise.all([...flood, quiet, listing]);
    expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 200));
  });

  it("holds a flood at its share while another tenant has requests at work", async () => {
    const quiet = publish("quiet");
    await waitFor(() => atWork.get("quiet") === 1);
    const flood = Array.from({ length: 50 }, () => publish("flood"));
    // One more than the busiest other tenant, at least perTenant.
    await waitFor(() => atWork.get("flood") === BOUNDS.perTenant);
    await new Promise((resolve) => setImmediate(resolve));
    expect(atWork.get("flood")).toBe(BOUNDS.perTenant);
    release();
    const answers = await Promise.all([quiet, ...flood]);
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
  });

  it("leaves bodies larger than the stream buffers to their own caps", async () => {
    const quiet = publish("quiet");
    await waitFor(() => atWork.get("quiet") === 1);
    const flood = Array.from({ length: 10 }, () => publish("flood"));
    await waitFor(() => atWork.get("flood") === BOUNDS.perTenant);
    const large = publish("flood", "x".repeat(17 * 1024));
    await waitFor(() => atWork.get("flood") === BOUNDS.perTenant + 1);
    release();
    await Promise.all([quiet, ...flood, large]);
  });
});

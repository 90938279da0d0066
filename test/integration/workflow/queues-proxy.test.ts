// The /queues-proxy prefix with world-vercel's own queue client (the Workflow DevKit's queue):
// createQueue() aimed at the gateway through WORKFLOW_VERCEL_BACKEND_URL, its project config and
// token, no origin rewriting. It publishes (CBOR, in the deployment's namespace), and its queue
// handler, pushed to by the gateway, settles the message through /queues-proxy too.
import { createQueue } from "@workflow/world-vercel";
import { decode } from "cbor-x";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts } from "../../helpers/http.js";
import { eventually } from "../../helpers/settings.js";

const fx = useGateways(1);
const DEPLOYMENT = "dpl_proxy1";
let token: string;
let server: Server;
let appUrl: string;
let handle: (req: Request) => Promise<Response>;
const handled: { payload: unknown; queueName: string; attempt: number }[] = [];

function worldQueue() {
  return createQueue({
    projectConfig: { projectId: "prj_1", teamId: "team_a", environment: "production" },
    token,
  });
}

beforeAll(async () => {
  token = await fx.issuer.token();
  // world-vercel's client refuses to acknowledge without a deployment ID (it throws before any
  // HTTP); the shipped World sets it, so does this test, else the settling is never exercised.
  process.env.VERCEL_DEPLOYMENT_ID = DEPLOYMENT;
  process.env.WORKFLOW_VERCEL_BACKEND_URL = fx.gateways[0]!.url;
  handle = worldQueue().createQueueHandler("__wkf_workflow_", (payload, meta) => {
    handled.push({ payload, queueName: meta.queueName, attempt: meta.attempt });
    return Promise.resolve(undefined);
  });
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string") headers.set(k, v);
      const request = new Request(`${appUrl}${req.url}`, {
        method: "POST",
        headers,
        body: Buffer.concat(chunks),
      });
      handle(request).then(
        async (r) => res.writeHead(r.status).end(Buffer.from(await r.arrayBuffer())),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  delete process.env.WORKFLOW_VERCEL_BACKEND_URL;
  delete process.env.VERCEL_DEPLOYMENT_ID;
  await new Promise((r) => server?.close(r));
});

describe("/queues-proxy with world-vercel's createQueue()", () => {
  it("publishes a CBOR message into the deployment's namespace", async () => {
    const { messageId } = await worldQueue().queue(
      "__wkf_step_proxy-publish",
      { workflowName: "w", workflowRunId: "wrun_1", workflowStartedAt: 1, stepId: "step_1" },
      { deploymentId: DEPLOYMENT },
    );
    expect(messageId).toMatch(/.+/);
    const got = await api(fx.gateways[0]!.url, token, {
      "vqs-deployment-id": DEPLOYMENT,
    }).receive("__wkf_step_proxy-publish", "default");
    expect(got.status).toBe(200);
    const [part] = await parts(got);
    expect(part!.headers.get("content-type")).toBe("application/cbor");
    expect(decode(part!.body)).toMatchObject({
      queueName: "__wkf_step_proxy-publish",
      payload: { workflowRunId: "wrun_1", stepId: "step_1" },
    });
  });

  it("pushes to the handler, which settles the message through /queues-proxy", async () => {
    const topic = "__wkf_workflow_proxy-push";
    const ns = api(fx.gateways[0]!.url, token, { "vqs-deployment-id": DEPLOYMENT });
    const put = await ns.call("PUT", `${topic}/consumer/default/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ push: { url: `${appUrl}/.well-known/workflow/v1/flow` } }),
    });
    expect(put.status, await put.clone().text()).toBe(200);
    const { messageId } = await worldQueue().queue(
      topic,
      { runId: "wrun_push" },
      { deploymentId: DEPLOYMENT },
    );
    expect(messageId).toMatch(/.+/);
    await eventually(() => handled.length === 1, 15_000);
    expect(handled[0]).toEqual({ payload: { runId: "wrun_push" }, queueName: topic, attempt: 1 });
    // Acknowledged by the client through /queues-proxy: the message is settled, not merely leased
    // (a lease would answer 409 message_not_available here).
    let last = "";
    await eventually(async () => {
      const byId = await ns.receiveById(topic, "default", messageId!);
      last = `${byId.status} ${byId.status >= 400 ? await errorCode(byId) : ""}`;
      return byId.status === 410;
    }, 15_000);
    expect(last).toBe("410 message_already_acknowledged");
  });

  it("serves the push JWKS there too, and nothing outside the API", async () => {
    const base = fx.gateways[0]!.url;
    const direct = await (await fetch(`${base}/.well-known/jwks.json`)).json();
    const proxied = await fetch(`${base}/queues-proxy/.well-known/jwks.json`);
    expect(proxied.status).toBe(200);
    expect(await proxied.json()).toEqual(direct);
    for (const path of ["/queues-proxy/metrics", "/queues-proxy/healthz", "/queues-proxy"]) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    }
  });
});

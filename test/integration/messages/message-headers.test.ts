// A message's own headers end to end, with the public client @vercel/queue 0.6.0 unchanged:
// `send`'s `headers` (and the client's `headers` option) are stored with the message and
// delivered with it, as multipart part headers and an NDJSON `headers` object, on receive and on
// receive by ID, after a delay and from the body store; HTTP's, the transport's and the API's
// headers are not the message's. The rule in milliseconds: test/unit/queue/message-header-rules.
// Hostile values: header-values.test.ts; pushed: test/integration/consumers/push.test.ts.
import { BadRequestError, PollingQueueClient } from "@vercel/queue";
import { describe, expect, it } from "vitest";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, parts, uniqueName, type Part } from "../../helpers/http.js";
import { eventually } from "../../helpers/wait.js";

/** Bodies above 1 KiB go to the body store. */
const f = useGateways(1, { config: { inlineBodyBytes: 1024 } });
/** NATS's default max_payload (1 MiB): the inline limit is what the headers leave of it. */
const plain = useGateways(1, {}, { maxPayload: 1024 * 1024 });

async function client(headers?: Record<string, string>): Promise<PollingQueueClient> {
  return new PollingQueueClient({
    region: "iad1",
    token: await f.issuer.token(),
    deploymentId: null,
    resolveBaseUrl: () => new URL(f.gateways[0]!.url),
    ...(headers ? { headers } : {}),
  });
}

/** A part's headers that are not the API's (`Vqs-*`, `Content-*`), names as delivered. */
function ownOf(part: Part): Record<string, string> {
  const own: Record<string, string> = {};
  part.headers.forEach((value, name) => {
    if (!/^(vqs-|content-)/i.test(name)) own[name] = value;
  });
  return own;
}

async function receiveOne(
  topic: string,
  group: string,
  via?: ReturnType<typeof api>,
): Promise<Part[]> {
  const q = via ?? api(f.gateways[0]!.url, await f.issuer.token());
  const res = await q.receive(topic, group);
  if (res.status === 204) return [];
  expect(res.status).toBe(200);
  return parts(res);
}

describe("a message's own headers with @vercel/queue", () => {
  it("are send's headers and the client's: part headers, NDJSON headers, by ID, and the client still reads it", async () => {
    const q = await client({ "X-App": "shop" });
    const topic = uniqueName("own-headers");
    const { messageId } = await q.send(
      topic,
      { n: 1 },
      // The client drops vqs-* names itself; the rest are plain request headers.
      { headers: { "X-Tenant": "acme", "Workflow-Run-Id": 'run "1"', "vqs-mine": "dropped" } },
    );
    const own = { "x-app": "shop", "x-tenant": "acme", "workflow-run-id": 'run "1"' };
    const [part] = await receiveOne(topic, "raw");
    // Nothing the client or fetch added (User-Agent, Accept*, Sec-Fetch-Mode, Vqs-Client-Ts,
    // Authorization, Host, Connection) is the message's.
    expect(ownOf(part!)).toEqual(own);
    expect(part!.headers.get("vqs-message-id")).toBe(messageId);

    const nd = await api(f.gateways[0]!.url, await f.issuer.token()).receive(topic, "nd", {
      accept: "application/x-ndjson",
    });
    expect(nd.status).toBe(200);
    const line = JSON.parse(await nd.text()) as { headers?: unknown; messageId: string };
    expect([line.messageId, line.headers]).toEqual([messageId, own]);

    const byId = await api(f.gateways[0]!.url, await f.issuer.token()).receiveById(
      topic,
      "by-id",
      messageId!,
    );
    expect(byId.status).toBe(200);
    expect(ownOf((await parts(byId))[0]!)).toEqual(own);

    const seen: unknown[] = [];
    const r = await q.receive(topic, "client", (payload) => void seen.push(payload));
    expect([r.ok, seen]).toEqual([true, [{ n: 1 }]]);
  });

  it("travel with a delayed message and a body in the body store", async () => {
    const q = await client();
    const topic = uniqueName("own-later");
    await q.send(topic, { later: true }, { delaySeconds: 1, headers: { "x-when": "later" } });
    const got: Part[] = [];
    expect(
      await eventually(async () => {
        got.push(...(await receiveOne(topic, "g")));
        return got.length > 0;
      }, 10_000),
    ).toBe(true);
    expect(ownOf(got[0]!)).toEqual({ "x-when": "later" });

    const large = "L".repeat(4096);
    const http = api(f.gateways[0]!.url, await f.issuer.token());
    const res = await http.publish(`${topic}-large`, large, {
      "content-type": "text/plain",
      "x-size": "large",
    });
    if (res.status === 413) {
      // A server older than 2.11 has no body store: such a body is refused, as ever.
      expect(await errorCode(res)).toBe("large_body_unsupported");
      return;
    }
    expect(res.status).toBe(201);
    const [big] = await receiveOne(`${topic}-large`, "g");
    expect([big!.body.length, ownOf(big!)]).toEqual([4096, { "x-size": "large" }]);
  });

  it("are refused with a 400 and their code when a delivery writes the name itself, storing nothing", async () => {
    const q = await client();
    const topic = uniqueName("own-refused");
    await expect(q.send(topic, { n: 1 }, { headers: { "ce-type": "forged" } })).rejects.toThrow(
      BadRequestError,
    );
    const http = api(f.gateways[0]!.url, await f.issuer.token());
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-h${i}`, "v"]));
    const tooMany = await http.publish(topic, "x", many);
    expect([tooMany.status, await errorCode(tooMany)]).toEqual([400, "message_headers_too_large"]);
    const tooLong = await http.publish(topic, "x", { "x-big": "v".repeat(8192) });
    expect([tooLong.status, await errorCode(tooLong)]).toEqual([400, "message_headers_too_large"]);
    expect(await receiveOne(topic, "g")).toEqual([]);
    // At the bounds (32 headers, 8192 bytes of names and values): stored.
    const full: Record<string, string> = Object.fromEntries(
      Array.from({ length: 31 }, (_, i) => [`x-h${i}`, "v"]),
    );
    const used = Object.entries(full).reduce((n, [k, v]) => n + k.length + v.length, 0);
    full["x-last"] = "v".repeat(8192 - used - "x-last".length);
    expect((await http.publish(topic, "at the bounds", full)).status).toBe(201);
    const [kept] = await receiveOne(topic, "g");
    expect(ownOf(kept!)).toEqual(full);
  });

  it("fit beside a body at the inline limit, with the most trace context a request can carry", async () => {
    const gw = plain.gateways[0]!;
    const http = api(gw.url, await plain.issuer.token());
    const topic = uniqueName("own-full");
    const own: Record<string, string> = Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [`x-h${String(i).padStart(2, "0")}`, "v".repeat(250)]),
    );
    const payload = Buffer.alloc(gw.gateway.inlineBodyBytes, 0x61);
    const res = await http.publish(topic, payload, {
      "content-type": `text/plain; x=${"c".repeat(240)}`,
      "vqs-idempotency-key": "k".repeat(256),
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: `v=${"s".repeat(500)}`,
      // Node takes 16 KiB of request headers: what the token and the rest leave of it.
      baggage: `b=${"g".repeat(4500)}`,
      ...own,
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const [part] = await receiveOne(topic, "g", http);
    expect([part!.body.length, ownOf(part!)]).toEqual([payload.length, own]);
  });
});

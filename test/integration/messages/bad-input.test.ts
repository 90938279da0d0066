// Bad input of every kind answers 4xx with its stable code, never 5xx, and changes nothing stored.
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERRORS } from "../../../src/errors.js";
import { startGateway, type TestGateway } from "../../helpers/gateway.js";
import { api, errorCode, errorCodeOf, parts, uniqueName, type Body } from "../../helpers/http.js";
import { startIssuer, type TestIssuer } from "../../helpers/issuer.js";
import { startTestNats, type TestNats } from "../../helpers/processes/nats.js";

let nats: TestNats;
let issuer: TestIssuer;
let gw: TestGateway;
let q: ReturnType<typeof api>;
const topic = uniqueName("victim");
let handle: string;

beforeAll(async () => {
  nats = await startTestNats();
  issuer = await startIssuer();
  gw = await startGateway(nats.url, issuer);
  q = api(gw.url, await issuer.token());
  // A stored message and a live lease that no bad request may disturb.
  expect((await q.publish(topic, "keep me")).status).toBe(201);
  const [p] = await parts(
    await q.receive(topic, "g", { "vqs-visibility-timeout-seconds": "3600" }),
  );
  handle = p!.headers.get("vqs-receipt-handle")!;
});

afterAll(async () => {
  await gw?.close();
  await issuer?.close();
  await nats?.dispose();
});

interface Case {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Body;
  status: number;
  code: string;
}

// (fetch resolves %2E%2E as "..", and trims header values: those cases are unit tests.)
const badNames = [
  "a.b",
  "a%20b",
  "a*",
  "a>",
  "caf%C3%A9",
  "a%2Fb",
  "x".repeat(256),
  "a%00b",
  "a%0Ab",
];

const cases = (): Case[] => [
  ...badNames.map((n) => ({
    name: `publish to topic ${n.slice(0, 20)}`,
    method: "POST",
    path: n,
    body: "x",
    status: 400,
    // A `*` reads as a topic pattern, which only the settings endpoints take.
    code: n.includes("*") ? "invalid_topic_pattern" : "invalid_topic_name",
  })),
  ...[
    ["POST", "orders*", "x"],
    ["POST", "*", "x"],
    ["POST", "a*b/batch", "x"],
    ["POST", "orders*/consumer/g", undefined],
    ["POST", "orders*/consumer/g/id/m1_AAAAAAAAAAAAAAAA", undefined],
    ["DELETE", "orders*/consumer/g/lease/x", undefined],
    ["PATCH", "orders*/consumer/g/lease/x", '{"visibilityTimeoutSeconds":1}'],
  ].map(([method, path, body]) => ({
    name: `${method} ${path} (a pattern where a topic belongs)`,
    method: method!,
    path: path!,
    headers: { accept: "multipart/mixed" },
    ...(body !== undefined ? { body } : {}),
    status: 400,
    code: "invalid_topic_pattern",
  })),
  ...badNames.map((n) => ({
    name: `receive for group ${n.slice(0, 20)}`,
    method: "POST",
    path: `${topic}/consumer/${n}`,
    headers: { accept: "multipart/mixed" },
    status: 400,
    code: "invalid_consumer_group_name",
  })),
  ...["59", "604801", "1.5", "1e3", "6 0", "0x10", "", "-60", "+60", "60, 60"].map((v) => ({
    name: `retention "${v}"`,
    method: "POST",
    path: topic,
    headers: { "vqs-retention-seconds": v },
    body: "x",
    status: 400,
    code: "invalid_retention_seconds",
  })),
  ...["-1", "604801", "2.0", "abc", ""].map((v) => ({
    name: `delay "${v}"`,
    method: "POST",
    path: topic,
    headers: { "vqs-delay-seconds": v },
    body: "x",
    status: 400,
    code: "invalid_delay_seconds",
  })),
  {
    name: "idempotency key over 256 characters",
    method: "POST",
    path: topic,
    headers: { "vqs-idempotency-key": "k".repeat(257) },
    body: "x",
    status: 400,
    code: "invalid_idempotency_key",
  },
  {
    name: "empty idempotency key",
    method: "POST",
    path: topic,
    headers: { "vqs-idempotency-key": "" },
    body: "x",
    status: 400,
    code: "invalid_idempotency_key",
  },
  {
    name: "content type over 255 characters",
    method: "POST",
    path: topic,
    headers: { "content-type": `text/${"x".repeat(300)}` },
    body: "x",
    status: 400,
    code: "invalid_content_type",
  },
  {
    name: "deployment id over 256 characters",
    method: "POST",
    path: topic,
    headers: { "vqs-deployment-id": "d".repeat(257) },
    body: "x",
    status: 400,
    code: "invalid_deployment_id",
  },
  ...[undefined, "text/html", "*/*", "application/json", "multipart/mixed;q=0"].map(
    (accept): Case => ({
      name: `receive with Accept ${String(accept)}`,
      method: "POST",
      path: `${topic}/consumer/g`,
      headers: accept === undefined ? {} : { accept },
      status: 400,
      code: "unsupported_accept",
    }),
  ),
  ...["0", "11", "1.0", "ten", ""].map((v) => ({
    name: `max messages "${v}"`,
    method: "POST",
    path: `${topic}/consumer/g`,
    headers: { accept: "multipart/mixed", "vqs-max-messages": v },
    status: 400,
    code: "invalid_max_messages",
  })),
  ...["-1", "3601", "60.5", "1e2"].map((v) => ({
    name: `visibility "${v}" on receive`,
    method: "POST",
    path: `${topic}/consumer/g`,
    headers: { accept: "multipart/mixed", "vqs-visibility-timeout-seconds": v },
    status: 400,
    code: "invalid_visibility_timeout",
  })),
  ...["0", "-1", "x"].map((v) => ({
    name: `max concurrency "${v}"`,
    method: "POST",
    path: `${topic}/consumer/g`,
    headers: { accept: "multipart/mixed", "vqs-max-concurrency": v },
    status: 400,
    code: "invalid_max_concurrency",
  })),
  {
    name: "visibility 3601 on receive by ID",
    method: "POST",
    path: `${topic}/consumer/g/id/m1_AAAAAAAAAAAAAAAA`,
    headers: { accept: "multipart/mixed", "vqs-visibility-timeout-seconds": "3601" },
    status: 400,
    code: "invalid_visibility_timeout",
  },
  {
    name: "receive by ID without Accept",
    method: "POST",
    path: `${topic}/consumer/g/id/m1_AAAAAAAAAAAAAAAA`,
    status: 400,
    code: "unsupported_accept",
  },
  ...[
    "garbage",
    "AQAAAAAAAAEAAAAAAAEAAAABAaH_YODA3kp-4i1tHG8dPRLYJXrSBQ",
    "a".repeat(54),
    "%00",
  ].map((h) => ({
    name: `ack with handle ${h.slice(0, 12)}`,
    method: "DELETE",
    path: `${topic}/consumer/g/lease/${h}`,
    status: 400,
    code: "invalid_receipt_handle",
  })),
  ...[
    ["not json", "invalid_request_body"],
    ["{}", "invalid_request_body"],
    ["[]", "invalid_request_body"],
    ['{"visibilityTimeoutSeconds":"60"}', "invalid_visibility_timeout"],
    ['{"visibilityTimeoutSeconds":1.5}', "invalid_visibility_timeout"],
    ['{"visibilityTimeoutSeconds":-1}', "invalid_visibility_timeout"],
    ['{"visibilityTimeoutSeconds":3601}', "invalid_visibility_timeout"],
    ['{"visibilityTimeoutSeconds":null}', "invalid_visibility_timeout"],
  ].map(([body, code]) => ({
    name: `extend with body ${body}`,
    method: "PATCH",
    path: `${topic}/consumer/g/lease/HANDLE`,
    headers: { "content-type": "application/json" },
    body: body!,
    status: 400,
    code: code!,
  })),
  ...(
    [
      ["{bad", 400, "invalid_request_body"],
      ["[]", 400, "invalid_settings"],
      ['{"push":{"url":"http://localhost","x":1}}', 400, "invalid_settings"],
      ['{"retry":{"afterSeconds":-1}}', 400, "invalid_settings"],
      ['{"retry":{"afterSeconds":"60"}}', 400, "invalid_settings"],
      [`{"deadLetter":{"topic":"${topic}","maxDeliveries":1}}`, 400, "invalid_settings"],
      ['{"push":{"url":"http://user:pw@localhost/"}}', 400, "invalid_settings"],
      ['{"push":{"url":"http://localhost.evil.com/"}}', 403, "push_destination_not_allowed"],
    ] as const
  ).map(([body, status, code]) => ({
    name: `settings with body ${body}`,
    method: "PUT",
    path: `${topic}/consumer/g/settings`,
    headers: { "content-type": "application/json" },
    body,
    status,
    code,
  })),
  ...(
    [
      ["PUT", "a*b/consumer/g/settings", "invalid_topic_pattern"],
      ["GET", "*/consumer/g/settings", "invalid_topic_pattern"],
      ["DELETE", "a**/consumer/g/settings", "invalid_topic_pattern"],
      ["GET", "a.b*/consumer/g/settings", "invalid_topic_pattern"],
      ["GET", "a.b/consumer/g/settings", "invalid_topic_name"],
      ["PUT", `${topic}/consumer/g*/settings`, "invalid_consumer_group_name"],
      ["DELETE", `${topic}/consumer/a%20b/settings`, "invalid_consumer_group_name"],
    ] as const
  ).map(([method, path, code]) => ({
    name: `settings ${method} ${path}`,
    method,
    path,
    headers: { "content-type": "application/json" },
    ...(method === "PUT" ? { body: "{}" } : {}),
    status: 400,
    code,
  })),
  ...["GET", "DELETE"].map((method) => ({
    name: `settings ${method} of none stored`,
    method,
    path: `${topic}/consumer/g/settings`,
    status: 404,
    code: "settings_not_found",
  })),
  {
    name: "malformed percent-encoding",
    method: "POST",
    path: "%E0%A4%A",
    body: "x",
    status: 400,
    code: "invalid_url",
  },
  {
    name: "unknown route",
    method: "GET",
    path: `${topic}/nothing/here`,
    status: 404,
    code: "route_not_found",
  },
];

describe("bad input", () => {
  it("answers each bad request with its 4xx code and never a 5xx", async () => {
    const failures: string[] = [];
    for (const c of cases()) {
      const res = await q.call(c.method, c.path.replace("HANDLE", handle), {
        headers: c.headers ?? {},
        ...(c.body !== undefined ? { body: c.body } : {}),
      });
      const code = res.headers.get("content-type")?.includes("json") ? await errorCode(res) : "";
      if (res.status !== c.status || code !== c.code) {
        failures.push(`${c.name}: got ${res.status} ${code}, want ${c.status} ${c.code}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("rejects a handle issued for another group, topic or tenant with 400 and changes nothing", async () => {
    const other = api(gw.url, await issuer.token({ owner_id: "team_other" }));
    expect((await q.ack(topic, "other-group", handle)).status).toBe(400);
    expect((await q.ack(uniqueName(), "g", handle)).status).toBe(400);
    expect((await other.ack(topic, "g", handle)).status).toBe(400);
    expect((await q.extend(topic, "other-group", handle, 0)).status).toBe(400);
    const dep = api(gw.url, await issuer.token(), { "vqs-deployment-id": "dpl_x" });
    expect((await dep.ack(topic, "g", handle)).status).toBe(400);
  });

  it("left the stored message and its lease untouched", async () => {
    // Still leased (not released by any bad request)...
    expect((await q.receive(topic, "g")).status).toBe(204);
    // ...and still there for another group, exactly once.
    const got = await parts(await q.receive(topic, "fresh", { "vqs-max-messages": "10" }));
    expect(got.map((p) => p.body.toString())).toEqual(["keep me"]);
    expect((await q.ack(topic, "g", handle)).status).toBe(204);
    // No settings were stored by any of them.
    const settings = await q.call("GET", `${topic}/consumer/g/settings`);
    expect(settings.status).toBe(404);
  });
});

/** A request with any method and body (fetch refuses a body on GET). */
function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; code: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}${path}`,
      { method, headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          let code = "";
          try {
            code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? "";
          } catch {
            // not JSON: no code
          }
          resolve({ status: res.statusCode ?? 0, code });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("bodies that do not parse", () => {
  const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
  const bodies: [string, string][] = [
    ["application/json", '{"visibilityTimeoutSeconds": '],
    ["application/json", "\u0000{]"],
    ["text/plain", "\u0000\u00ff garbage"],
    ["application/x-www-form-urlencoded", "a=%%%"],
    ["application/octet-stream", "\u0001\u0002"],
    ["multipart/mixed; boundary=x", "--y\r\n"],
    ["invalid content type", "{bad"],
  ];
  const lease = `/api/v3/topic/${topic}/consumer/g/lease/HANDLE`;
  const settings = `/api/v3/topic/${topic}/consumer/g/settings`;
  type Answer = [number, string];
  /**
   * [method, path] -> [status, code] for an authenticated request; unlisted: 404 route_not_found.
   * A list is the answers in turn: the first accepted request changes what the next ones see.
   */
  const routed = (): Record<string, Answer | Answer[]> => ({
    "GET /healthz": [200, ""],
    // The management API: GET runs before the POST that creates the topic; DELETE removes it once.
    [`GET /api/v3/topic/${topic}-bodies`]: [404, "topic_not_found"],
    [`DELETE /api/v3/topic/${topic}-bodies`]: [
      [204, ""],
      [404, "topic_not_found"],
    ],
    [`DELETE /api/v3/topic/${topic}/consumer/g`]: [
      [204, ""],
      [404, "group_not_found"],
    ],
    [`POST /api/v3/topic/${topic}-bodies`]: [201, ""],
    [`POST /api/v3/topic/${topic}/consumer/g`]: [400, "unsupported_accept"],
    [`PATCH ${lease}`]: [400, "invalid_request_body"],
    [`DELETE ${lease}`]: [400, "invalid_receipt_handle"],
    [`PUT ${settings}`]: [400, "invalid_request_body"],
    [`GET ${settings}`]: [404, "settings_not_found"],
    [`DELETE ${settings}`]: [404, "settings_not_found"],
    ["GET /api/v3/settings"]: [200, ""],
  });
  const paths = () => [
    "/",
    "/api",
    "/api/v3",
    "/api/v3/nothing",
    "/api/v3/topic",
    `/api/v3/topic/${topic}-bodies`,
    `/api/v3/topic/${topic}/consumer/g`,
    lease,
    settings,
    "/api/v3/settings",
    "/healthz",
    "/metrics/x",
  ];

  it("answers 400 on a route that reads JSON, 404 elsewhere, and never a 5xx", async () => {
    const token = await issuer.token();
    const failures: string[] = [];
    const turns = new Map<string, number>();
    for (const withToken of [true, false]) {
      for (const method of METHODS) {
        for (const path of paths()) {
          for (const [type, body] of bodies) {
            const headers: Record<string, string> = { "content-type": type };
            if (withToken) headers.authorization = `Bearer ${token}`;
            const got = await raw(gw.url, method, path, headers, body);
            const key = `${method} ${path}`;
            const entry = routed()[key];
            const turn = turns.get(key) ?? 0;
            const route = Array.isArray(entry?.[0])
              ? (entry as Answer[])[Math.min(turn, (entry as Answer[]).length - 1)]
              : (entry as Answer | undefined);
            const api = path.startsWith("/api/v3/");
            let want: Answer;
            if (!route) want = [404, "route_not_found"];
            else if (!withToken && api) want = [401, "missing_token"];
            // A Content-Type header that is no media type: refused by the route that would read it.
            else if (api && method !== "GET" && type === "invalid content type") {
              want = [400, "invalid_content_type"];
            } else {
              want = route;
              turns.set(key, turn + 1);
            }
            if (got.status !== want[0] || got.code !== want[1]) {
              failures.push(
                `${withToken ? "token" : "no token"} ${method} ${path.slice(0, 60)} (${type}):` +
                  ` got ${got.status} ${got.code}, want ${want[0]} ${want[1]}`,
              );
            }
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });
});

/**
 * A fuzz over every operation of the OpenAPI document (docs/openapi.json): each path and method,
 * its path parameters malformed or valid, its declared headers and query parameters given
 * garbage, bodies that are no body it reads, and tokens that are missing, malformed, expired or
 * another tenant's. Every answer is below 500, and every refusal names a code of the catalogue.
 * The stored message of this file is not in reach (its topic is never a parameter here).
 */
describe("a fuzz over every operation of the OpenAPI document", () => {
  interface Param {
    readonly name: string;
    readonly in: string;
  }
  type Operation = { readonly parameters?: readonly Param[] };
  const doc = JSON.parse(
    readFileSync(new URL("../../../docs/openapi.json", import.meta.url), "utf8"),
  ) as { paths: Record<string, Record<string, Operation>> };
  const METHODS = ["get", "post", "put", "patch", "delete"];
  const badSegments = ["a.b", "a%20b", "%ZZ", "x".repeat(300), "a%00b", "caf%C3%A9", "*", "-"];
  const garbage = ["", "-1", "1e309", "abc", "9".repeat(40), "ÿþ", "a,b", "x".repeat(5000)];
  const bodies: (Body | undefined)[] = [
    undefined,
    "\u0000\u00ff{",
    '{"visibilityTimeoutSeconds": "x", "retry": [] }',
    "[".repeat(10_000),
    "--b\r\ncontent-type: text/plain\r\n\r\nx",
  ];
  const contentTypes = ["application/json", "multipart/mixed; boundary=b", "text/plain", "a/b;;;"];

  it("answers every malformed request below 500, with a code of the catalogue", async () => {
    const codes = new Set(Object.keys(ERRORS));
    const valid = await issuer.token();
    const tokens = [
      `Bearer ${valid}`,
      undefined,
      "Bearer not.a.token",
      "Basic dXNlcjpwYXNz",
      `Bearer ${await issuer.token({}, { expiresIn: "-1h" })}`,
      `Bearer ${await issuer.token({ owner_id: "team_fuzz_other" })}`,
    ];
    const failures: string[] = [];
    let sent = 0;
    const send = async (
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: Body,
    ) => {
      sent++;
      let res: Response;
      try {
        res = await fetch(`${gw.url}${path}`, {
          method: method.toUpperCase(),
          headers,
          ...(body !== undefined && method !== "get" ? { body } : {}),
        });
      } catch (err) {
        failures.push(`${method} ${path.slice(0, 80)}: no answer (${String(err)})`);
        return;
      }
      const text = await res.text();
      if (res.status >= 500) {
        failures.push(
          `${method} ${path.slice(0, 80)} ${JSON.stringify(headers).slice(0, 120)}: ${res.status} ${text.slice(0, 120)}`,
        );
      } else if (res.status >= 400 && res.headers.get("content-type")?.includes("json")) {
        const code = errorCodeOf(text);
        if (code === null || !codes.has(code)) {
          failures.push(`${method} ${path.slice(0, 80)}: ${res.status} with code ${String(code)}`);
        }
      }
    };
    let turn = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const params = op.parameters ?? [];
        const fill = (bad: (name: string) => string) =>
          template.replace(/\{(\w+)\}/g, (_m, name: string) => bad(name));
        // Path parameters: each malformed in turn, and all valid (a throwaway topic).
        const paths = [
          ...badSegments.map((s) => fill(() => s)),
          fill((name) => (name === "topic" ? `fuzz-${name}` : name === "group" ? "g" : "AAAA")),
        ];
        for (const path of paths) {
          // Two tokens a path, in turn: every kind meets every operation.
          for (const token of [tokens[turn % tokens.length], tokens[(turn + 1) % tokens.length]]) {
            const t = turn++;
            const headers: Record<string, string> = {
              "content-type": contentTypes[t % contentTypes.length]!,
              accept: t % 2 ? "multipart/mixed" : "x/y",
            };
            if (token) headers.authorization = token;
            // Every declared header given garbage, and every query parameter too.
            const query: string[] = [];
            for (const p of params) {
              const value = garbage[(t + p.name.length) % garbage.length]!;
              if (p.in === "header") headers[p.name.toLowerCase()] = value;
              if (p.in === "query") query.push(`${p.name}=${encodeURIComponent(value)}`);
            }
            const url = query.length > 0 ? `${path}?${query.join("&")}` : path;
            await send(method, url, headers, bodies[t % bodies.length]);
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(400);
    expect(failures).toEqual([]);
  }, 180_000);
});

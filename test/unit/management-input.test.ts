// The management routes' refusals of bad input through Fastify's inject: each answer's status,
// code and message, as the operations' definitions (src/api/management.ts) check them. Nothing
// behind the routes is reached: the service and the audit log throw if used.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";
import { managementRoutes } from "../../src/http/routes/management/index.js";
import { inputApp, unused } from "../helpers/input-app.js";
import type { AuditLog } from "../../src/http/routes/management/audit.js";
import type { ManagementService } from "../../src/queue/management/management-service.js";

const WHAT = "management input test";

let app: FastifyInstance;

beforeAll(async () => {
  app = await inputApp((a) =>
    managementRoutes(a, unused<ManagementService>(WHAT), unused<AuditLog>(WHAT)),
  );
});

afterAll(async () => {
  await app?.close();
});

async function refusal(method: "GET" | "POST" | "DELETE", url: string, payload?: string) {
  const r = await app.inject({
    method,
    url: `/api/v3/${url}`,
    ...(payload !== undefined ? { payload, headers: { "content-type": "text/plain" } } : {}),
  });
  return [r.statusCode, r.json<{ error: { code: string; message: string } }>().error] as const;
}

const SEEK_SHAPE =
  'The body must be JSON of the form {"to": "earliest" | "latest" | "<ISO 8601 time>"}.';

describe("management input", () => {
  it("answers bad query parameters 400 invalid_query, naming the parameter", async () => {
    const cases: [string, string][] = [
      ["topics?limit=0", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=1001", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=ten", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=1e2", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=-1", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=", "`limit` must be an integer from 1 to 1000."],
      ["topics?limit=1&limit=2", "`limit` must be given once."],
      ["topics?cursor=a.b", "`cursor` is not one this API gave."],
      ["topics?cursor=", "`cursor` is not one this API gave."],
      ["topics?cursor=a&cursor=b", "`cursor` must be given once."],
      ["topics?limit=0&cursor=a.b", "`limit` must be an integer from 1 to 1000."],
      ["topic/t/messages?limit=101", "`limit` must be an integer from 1 to 100."],
      ["topic/t/messages?payload=all", "`payload` must be preview or full."],
      ["topic/t/messages?payload=full&payload=full", "`payload` must be given once."],
      ["topic/t/messages?after=a&after=b", "`after` must be given once."],
      ["topic/t/messages?limit=0&payload=all", "`limit` must be an integer from 1 to 100."],
    ];
    for (const [url, message] of cases) {
      expect([url, ...(await refusal("GET", url))]).toEqual([
        url,
        400,
        { code: "invalid_query", message },
      ]);
    }
  });

  it("answers bad names with the catalogue's name codes", async () => {
    const cases: [string, "GET" | "POST" | "DELETE", string][] = [
      ["topic/bad.name", "GET", "invalid_topic_name"],
      ["topic/orders*", "GET", "invalid_topic_pattern"],
      [`topic/${"a".repeat(256)}/consumers`, "GET", "invalid_topic_name"],
      ["topic/bad.name/messages", "GET", "invalid_topic_name"],
      // The path is checked before the query.
      ["topic/bad.name/messages?limit=0", "GET", "invalid_topic_name"],
      ["topic/bad.name", "DELETE", "invalid_topic_name"],
      ["topic/o*/purge", "POST", "invalid_topic_pattern"],
      ["topic/t/consumer/bad.group", "DELETE", "invalid_consumer_group_name"],
      ["topic/bad.name/consumer/bad.group", "DELETE", "invalid_topic_name"],
      ["topic/t/consumer/g*/seek", "POST", "invalid_consumer_group_name"],
    ];
    for (const [url, method, code] of cases) {
      const [status, error] = await refusal(method, url);
      expect([url, status, error.code]).toEqual([url, 400, code]);
    }
  });

  it("answers a bad seek body 400 invalid_request_body, after the names", async () => {
    for (const body of ["{}", '{"to":"yesterday"}', '{"to":5}', '{"to":"earliest","x":1}']) {
      expect([body, ...(await refusal("POST", "topic/t/consumer/g/seek", body))]).toEqual([
        body,
        400,
        { code: "invalid_request_body", message: SEEK_SHAPE },
      ]);
    }
    for (const body of ["[]", "null", '"earliest"', '{"to":"2026-13-45T00:00:00Z"}']) {
      const [status, error] = await refusal("POST", "topic/t/consumer/g/seek", body);
      expect([body, status, error]).toEqual([
        body,
        400,
        { code: "invalid_request_body", message: SEEK_SHAPE },
      ]);
    }
    const [status, error] = await refusal("POST", "topic/t/consumer/g/seek", "not json");
    expect([status, error.code, error.message]).toEqual([
      400,
      "invalid_request_body",
      ERRORS.invalid_request_body.message,
    ]);
    const [, named] = await refusal("POST", "topic/t/consumer/bad.g/seek", "{}");
    expect(named.code).toBe("invalid_consumer_group_name");
  });
});

// The redrive's refusals of a bad body through Fastify's inject: each answer's status, code and
// message, as its definition (REDRIVE_BODY in src/api/settings.ts) checks it. Nothing behind the
// route is reached: the service and the audit log throw if used.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";
import { redriveRoute } from "../../src/http/routes/dead-letters/redrive.js";
import { inputApp, unused } from "../helpers/input-app.js";
import type { AuditLog } from "../../src/http/routes/management/audit.js";
import type { QueueService } from "../../src/queue/queue-service.js";

const WHAT = "redrive input test";

let app: FastifyInstance;

beforeAll(async () => {
  app = await inputApp((a) => redriveRoute(a, unused<QueueService>(WHAT), unused<AuditLog>(WHAT)));
});

afterAll(async () => {
  await app?.close();
});

const SHAPE =
  'The body must be JSON of the form {"topic": <topic name>, "limit": <integer 1..10000>}, both optional.';
const BAD_NAME = ERRORS.invalid_topic_name.message;

describe("redrive input", () => {
  it("answers a bad body with the shape, a bad topic with the name code, in the old order", async () => {
    const cases: [string, string, string][] = [
      ["[]", "invalid_request_body", SHAPE],
      ["null", "invalid_request_body", SHAPE],
      ['"t"', "invalid_request_body", SHAPE],
      ['{"x":1}', "invalid_request_body", SHAPE],
      ['{"limit":0}', "invalid_request_body", SHAPE],
      ['{"limit":10001}', "invalid_request_body", SHAPE],
      ['{"limit":1.5}', "invalid_request_body", SHAPE],
      ['{"limit":"5"}', "invalid_request_body", SHAPE],
      ['{"topic":"bad.t"}', "invalid_topic_name", BAD_NAME],
      ['{"topic":"t*"}', "invalid_topic_name", BAD_NAME],
      ['{"topic":null}', "invalid_topic_name", BAD_NAME],
      ['{"topic":""}', "invalid_topic_name", BAD_NAME],
      // Several faults: unknown keys first, then the topic, then the limit.
      ['{"x":1,"topic":"bad.t"}', "invalid_request_body", SHAPE],
      ['{"topic":"bad.t","limit":0}', "invalid_topic_name", BAD_NAME],
    ];
    for (const [body, code, message] of cases) {
      const r = await app.inject({
        method: "POST",
        url: "/api/v3/topic/dead/redrive",
        payload: body,
        headers: { "content-type": "application/json" },
      });
      expect([body, r.statusCode, r.json<{ error: unknown }>().error]).toEqual([
        body,
        400,
        { code, message },
      ]);
    }
  });
});

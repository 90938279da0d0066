// A message's own headers (src/queue/message-headers.ts): which of a publish's headers are the
// message's (what @vercel/queue 0.6.0 puts on a send is the model), the refusals and bounds, a
// batch part's trace context from its request, and the headers travelling with the message on
// the in-memory ports: receive, receive by ID, a delay, a dead-letter copy and its redrive. On a
// real nats-server with the real client: test/integration/messages/message-headers.test.ts.
import { describe, expect, it } from "vitest";
import type { AppError } from "../../../src/errors.js";
import { publishInput } from "../../../src/http/routes/messages/publish-input.js";
import { LIMITS } from "../../../src/queue/limits.js";
import type { ConsumerSettings } from "../../../src/queue/settings/consumer-settings.js";
import { errorCode, rulesGroup, useMemoryQueue } from "../../helpers/memory-queue.js";

const EMPTY = Buffer.alloc(0);
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/** What Node gives the route for a `send("orders", x, {headers})` of @vercel/queue 0.6.0. */
const CLIENT_SEND = {
  host: "127.0.0.1:8080",
  connection: "keep-alive",
  "content-type": "application/json",
  "content-length": "9",
  authorization: "Bearer t",
  "user-agent": "@vercel/queue/0.6.0",
  "vqs-client-ts": "2026-01-05T10:00:00.000Z",
  "vqs-idempotency-key": "k1",
  accept: "*/*",
  "accept-language": "*",
  "accept-encoding": "gzip, deflate",
  "sec-fetch-mode": "cors",
  traceparent: TRACEPARENT,
  "x-forwarded-for": "10.0.0.1",
  // The app's own (send's `headers`, and the client's `headers` option):
  "x-tenant": "acme",
  "workflow-run-id": 'run "42" \\ ok',
};

const refusal = (code: string) => expect.objectContaining({ code }) as AppError;

describe("a publish's own headers", () => {
  it("are every header that is not HTTP's, the transport's, the API's or a credential", () => {
    const input = publishInput(CLIENT_SEND, EMPTY);
    expect(input.headers).toEqual({ "x-tenant": "acme", "workflow-run-id": 'run "42" \\ ok' });
    expect(input.trace).toEqual({ traceparent: TRACEPARENT });
    expect(input.idempotencyKey).toBe("k1");
    expect(publishInput({ "content-type": "text/plain" }, EMPTY).headers).toEqual({});
  });

  it("leave out the service's own x-vercel-queue-* names, as the Workflow world sends them", () => {
    const input = publishInput({ "x-vercel-queue-region": "iad1", "x-tenant": "acme" }, EMPTY);
    expect(input.headers).toEqual({ "x-tenant": "acme" });
  });

  it("refuse names a delivery writes itself, with reserved_message_header", () => {
    for (const name of ["ce-type", "ce-vqsreceipthandle", "content-language"]) {
      expect(() => publishInput({ [name]: "1" }, EMPTY), name).toThrow(
        refusal("reserved_message_header"),
      );
    }
  });

  it("refuse a value that is not visible ASCII, and __proto__, with invalid_message_header", () => {
    for (const value of [
      "a\tb",
      "caf\u00e9",
      "x\u010d\u010aVqs-Receipt-Handle: forged",
      "\u0000",
    ]) {
      expect(() => publishInput({ "x-a": value }, EMPTY), JSON.stringify(value)).toThrow(
        refusal("invalid_message_header"),
      );
    }
    const proto = JSON.parse('{"__proto__": "x"}') as Record<string, string>;
    expect(() => publishInput(proto, EMPTY)).toThrow(refusal("invalid_message_header"));
    // A field given twice is one value, as HTTP joins its lines.
    expect(publishInput({ "x-a": ["1", "2"] }, EMPTY).headers).toEqual({ "x-a": "1, 2" });
    expect(publishInput({ "x-empty": "" }, EMPTY).headers).toEqual({ "x-empty": "" });
  });

  it(`are at most ${LIMITS.messageHeaders.maxCount}, of at most ${LIMITS.messageHeaders.maxBytes} bytes together`, () => {
    const { maxCount, maxBytes } = LIMITS.messageHeaders;
    const many = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
    expect(Object.keys(publishInput(many(maxCount), EMPTY).headers)).toHaveLength(maxCount);
    expect(() => publishInput(many(maxCount + 1), EMPTY)).toThrow(
      refusal("message_headers_too_large"),
    );
    // Names and values count: "x-big" and its value make exactly the limit, one more is over.
    const value = "v".repeat(maxBytes - "x-big".length);
    expect(publishInput({ "x-big": value }, EMPTY).headers["x-big"]).toBe(value);
    expect(() => publishInput({ "x-big": value + "v" }, EMPTY)).toThrow(
      refusal("message_headers_too_large"),
    );
    // What is not the message's does not count (CLIENT_SEND has two of the message's own).
    const full = publishInput({ ...many(maxCount - 2), ...CLIENT_SEND }, EMPTY).headers;
    expect(Object.keys(full)).toHaveLength(maxCount);
  });

  it("of a batch part take the request's trace context when the part carries none", () => {
    const request = { traceparent: TRACEPARENT, tracestate: "v=1" } as const;
    const fallback = { traceparent: TRACEPARENT, tracestate: "v=1" };
    expect(publishInput({ "content-type": "text/plain" }, EMPTY, fallback).trace).toEqual(request);
    const own = "00-11111111111111111111111111111111-2222222222222222-01";
    expect(publishInput({ traceparent: own }, EMPTY, fallback).trace).toEqual({ traceparent: own });
    // A malformed field of the part's own is dropped: it then carries none.
    expect(publishInput({ traceparent: "nope" }, EMPTY, fallback).trace).toEqual(request);
  });
});

describe("a message's headers travel with it", () => {
  let settings: ConsumerSettings | null = null;
  const memory = useMemoryQueue({ settingsOf: (g) => (g.group === "workers" ? settings : null) });
  const workers = rulesGroup("workers");
  const headers = { "x-tenant": "acme", "x-order": "42" };

  it("to a receive, a receive by ID and after a delay", async () => {
    const id = await memory.publishId(workers, "a", { headers });
    await memory.publishId(workers, "later", { headers: { "x-late": "1" }, delaySeconds: 5 });
    const [m] = await memory.receive(workers);
    expect(m!.headers).toEqual(headers);
    const byId = await memory.queue.receiveById(rulesGroup("other"), id, {
      visibilityTimeoutSeconds: 30,
      maxConcurrency: null,
    });
    expect(byId.headers).toEqual(headers);
    expect(await memory.receive(workers)).toEqual([]);
    memory.advance(5_000);
    const [late] = await memory.receive(workers);
    expect(late!.headers).toEqual({ "x-late": "1" });
  });

  it("to its dead-letter copy and back with a redrive", async () => {
    settings = {
      push: null,
      retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: { topic: "orders-dead", maxDeliveries: 1 },
      flowControl: null,
    };
    await memory.publishId(workers, "poison", { headers });
    expect(await memory.receive(workers, { visibilityTimeoutSeconds: 1 })).toHaveLength(1);
    memory.advance(1_100);
    expect(await memory.receive(workers)).toEqual([]);
    const dead = { ...workers, topic: "orders-dead", group: "look" };
    const [copy] = await memory.receive(dead);
    expect(copy!.headers).toEqual(headers);
    expect(copy!.deadLetter?.consumerGroup).toBe("workers");
    await memory.queue.acknowledge(dead, copy!.receiptHandle);
    settings = null;
    const redriven = await memory.queue.redrive(dead, { target: null, limit: 10 });
    expect(redriven.moved).toBe(1);
    const [back] = await memory.receive(workers);
    expect([back!.headers, back!.deadLetter]).toEqual([headers, null]);
    expect(await errorCode(memory.queue.acknowledge(workers, back!.receiptHandle))).toBe(
      "(no error)",
    );
  });
});

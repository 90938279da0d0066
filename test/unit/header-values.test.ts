// Stored values written into headers: publish keeps only visible ASCII (0x20-0x7E), and the
// writers of answers and pushes never let a stored value that is not (a message stored before
// publish refused those) start a header line.
import { describe, expect, it } from "vitest";
import type { AppError } from "../../src/errors.js";
import { renderMultipart, renderNdjson } from "../../src/http/encoding/message-parts.js";
import { publishInput } from "../../src/http/routes/messages/publish-input.js";
import { deliveredContentType, isHeaderValue } from "../../src/queue/limits.js";
import { pushRequest } from "../../src/queue/push-delivery/cloud-event.js";
import type { ReceivedMessage } from "../../src/queue/delivery/received-message.js";
import { collect, receivedMessage } from "../helpers/received-message.js";

/** U+010D U+010A, cut to latin1: CR LF. And the bytes themselves, and other line ends. */
const HOSTILE = [
  "text/plain\u010d\u010aVqs-Receipt-Handle: forged",
  "text/plain\r\nVqs-Receipt-Handle: forged",
  "text/plain\nContent-Length: 1",
  "text/plain\u0085x",
  "text/plain\u2028x",
  "text/plain\u00ff",
  "text/plain;\tcharset=utf-8",
  "text/\u0000plain",
  "text/\u007fplain",
];

function stored(contentType: string | null, extra: Partial<ReceivedMessage> = {}): ReceivedMessage {
  return receivedMessage({ contentType, ...extra });
}

async function text(body: NodeJS.ReadableStream, encoding: BufferEncoding): Promise<string> {
  return (await collect(body)).toString(encoding);
}

describe("header values", () => {
  it("are visible ASCII, 0x20-0x7E: no control character, nothing above", () => {
    expect(isHeaderValue('application/json; charset="utf-8" ~!')).toBe(true);
    expect(isHeaderValue("")).toBe(true);
    for (const v of HOSTILE) expect(isHeaderValue(v), JSON.stringify(v)).toBe(false);
    expect(deliveredContentType(null)).toBe("application/octet-stream");
    expect(deliveredContentType("text/plain")).toBe("text/plain");
    expect(deliveredContentType(HOSTILE[0]!)).toBe("application/octet-stream");
  });

  it("refuse a publish's Content-Type or idempotency key that is not one, with its code", () => {
    for (const v of HOSTILE) {
      expect(() => publishInput({ "content-type": v }, Buffer.alloc(0))).toThrow(
        expect.objectContaining({ code: "invalid_content_type" }) as AppError,
      );
      expect(() => publishInput({ "vqs-idempotency-key": v }, Buffer.alloc(0))).toThrow(
        expect.objectContaining({ code: "invalid_idempotency_key" }) as AppError,
      );
    }
    const ok = publishInput(
      { "content-type": "text/plain; charset=utf-8", "vqs-idempotency-key": "order 42 ~!" },
      Buffer.alloc(0),
    );
    expect([ok.contentType, ok.idempotencyKey]).toEqual([
      "text/plain; charset=utf-8",
      "order 42 ~!",
    ]);
  });

  it("a multipart part head holds only visible ASCII lines, whatever was stored", async () => {
    const deadLetter = {
      topic: "orders\u010d\u010aVqs-Receipt-Handle: forged",
      consumerGroup: "g",
      messageId: "m0",
      deliveryCount: 3,
    };
    const messages = HOSTILE.map((ct) => stored(ct, { deadLetter }));
    const rendered = renderMultipart(messages);
    const boundary = rendered.contentType.split("boundary=")[1]!;
    const raw = await text(rendered.body, "latin1");
    const heads = raw
      .split(`--${boundary}`)
      .slice(1, -1)
      .map((p) => p.split("\r\n\r\n")[0]!.split("\r\n").slice(1));
    expect(heads).toHaveLength(HOSTILE.length);
    for (const head of heads) {
      expect(head).toEqual([
        "Content-Type: application/octet-stream",
        "Vqs-Message-Id: m1_AAAAAAAAAAAAAAAA",
        "Vqs-Receipt-Handle: handle-1",
        "Vqs-Delivery-Count: 1",
        "Vqs-Timestamp: 2023-11-14T22:13:20.000Z",
        "Vqs-Expires-At: 2023-11-15T22:13:20.000Z",
        "Content-Length: 7",
      ]);
    }
    // Nothing but the payloads and the heads: no stray line end anywhere.
    expect(raw).not.toContain("forged");
    expect(raw).not.toMatch(/[^\r]\n|\r[^\n]/);
  });

  it("NDJSON and a push say the default Content-Type for such a value, and drop such trace fields", async () => {
    const m = stored(HOSTILE[0]!, {
      trace: { traceparent: "00-\u010d\u010a", tracestate: "ok=1", baggage: "a=\u010a" },
    });
    const line = JSON.parse(await text(renderNdjson([m]).body, "utf8")) as { contentType: string };
    expect(line.contentType).toBe("application/octet-stream");
    const push = pushRequest({
      region: "iad1",
      topic: "t",
      group: "g",
      message: m,
      visibilityDeadline: new Date(1_700_000_060_000),
      inline: true,
      jwt: "jwt",
      sentAtMs: 1_700_000_000_000,
    });
    expect(push.headers["content-type"]).toBe("application/octet-stream");
    expect(push.headers["x-vercel-queue-tracestate"]).toBe("ok=1");
    expect(push.headers).not.toHaveProperty("x-vercel-queue-traceparent");
    expect(push.headers).not.toHaveProperty("x-vercel-queue-baggage");
    for (const [k, v] of Object.entries(push.headers)) {
      expect(isHeaderValue(v), `${k}: ${JSON.stringify(v)}`).toBe(true);
    }
    const ok = pushRequest({
      region: "iad1",
      topic: "t",
      group: "g",
      message: stored("application/json"),
      visibilityDeadline: new Date(1_700_000_060_000),
      inline: true,
      jwt: "jwt",
      sentAtMs: 1_700_000_000_000,
    });
    expect(ok.headers["content-type"]).toBe("application/json");
  });

  it("a message's own headers are written after the API's, and a stored one no publish keeps is not", async () => {
    const own = { "x-tenant": "acme", "workflow-run-id": "run_1", "x-empty": "" };
    const hostile = {
      ...own,
      "x-crlf": "a\u010d\u010aVqs-Receipt-Handle: forged",
      "x-bad name": "v",
      "ce-vqsreceipthandle": "forged",
      "content-length": "1",
      "x-vercel-queue-traceparent": "forged",
      authorization: "forged",
      host: "forged",
    };
    const m = stored("text/plain", { headers: hostile });
    const rendered = renderMultipart([m]);
    const boundary = rendered.contentType.split("boundary=")[1]!;
    const raw = await text(rendered.body, "latin1");
    const head = raw.split(`--${boundary}`)[1]!.split("\r\n\r\n")[0]!.split("\r\n").slice(1);
    expect(head).toEqual([
      "Content-Type: text/plain",
      "Vqs-Message-Id: m1_AAAAAAAAAAAAAAAA",
      "Vqs-Receipt-Handle: handle-1",
      "Vqs-Delivery-Count: 1",
      "Vqs-Timestamp: 2023-11-14T22:13:20.000Z",
      "Vqs-Expires-At: 2023-11-15T22:13:20.000Z",
      "x-tenant: acme",
      "workflow-run-id: run_1",
      "x-empty: ",
      "Content-Length: 7",
    ]);
    expect(raw).not.toContain("forged");
    const line = JSON.parse(await text(renderNdjson([m]).body, "utf8")) as { headers?: unknown };
    expect(line.headers).toEqual(own);
    const plain = JSON.parse(await text(renderNdjson([stored(null)]).body, "utf8")) as object;
    expect(plain).not.toHaveProperty("headers");
    const push = pushRequest({
      region: "iad1",
      topic: "t",
      group: "g",
      message: m,
      visibilityDeadline: new Date(1_700_000_060_000),
      inline: true,
      jwt: "jwt",
      sentAtMs: 1_700_000_000_000,
    });
    expect(push.headers).toMatchObject(own);
    expect(push.headers.authorization).toBe("Bearer jwt");
    expect(push.headers["ce-vqsreceipthandle"]).toBe("handle-1");
    expect(push.headers).not.toHaveProperty("host");
    expect(push.headers).not.toHaveProperty("content-length");
    expect(push.headers).not.toHaveProperty("x-crlf");
    expect(push.headers).not.toHaveProperty("x-vercel-queue-traceparent");
    expect(JSON.stringify(push.headers)).not.toContain("forged");
  });
});

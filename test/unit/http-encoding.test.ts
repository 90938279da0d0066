import { parseMultipartStream } from "mixpart";
import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { PassThrough } from "node:stream";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { AppError } from "../../src/errors.js";
import { negotiateFormat } from "../../src/http/encoding/accept.js";
import { intHeader } from "../../src/http/validation.js";
import { readInlineBody } from "../../src/http/encoding/inline-body.js";
import { abortable } from "../../src/http/encoding/publish-body.js";
import { UploadAbort } from "../../src/http/plugins/upload-watchdog.js";
import { renderMultipart, renderNdjson } from "../../src/http/encoding/message-parts.js";
import type { ReceivedMessage } from "../../src/queue/delivery/received-message.js";
import { collect, receivedMessage } from "../helpers/received-message.js";

const bounds = { min: 0, max: 3600 };

describe("integer headers", () => {
  it("accept plain base-10 digits within bounds, and the default when absent", () => {
    expect(intHeader("60", bounds, 1, "invalid_visibility_timeout")).toBe(60);
    expect(intHeader("0", bounds, 1, "invalid_visibility_timeout")).toBe(0);
    expect(intHeader(undefined, bounds, 7, "invalid_visibility_timeout")).toBe(7);
    expect(intHeader(undefined, bounds, null, "invalid_visibility_timeout")).toBeNull();
  });

  it("refuse everything else with the given code", () => {
    for (const v of [
      "1.5",
      "1e3",
      " 60",
      "60 ",
      "0x10",
      "",
      "-1",
      "+1",
      "3601",
      "٣",
      "99999999999999999",
      ["1", "2"],
    ]) {
      expect(() => intHeader(v, bounds, 1, "invalid_visibility_timeout")).toThrow(
        expect.objectContaining({ code: "invalid_visibility_timeout" }) as AppError,
      );
    }
  });
});

describe("Accept negotiation", () => {
  it("prefers multipart/mixed, accepts NDJSON, refuses the rest", () => {
    expect(negotiateFormat("multipart/mixed")).toBe("multipart");
    expect(negotiateFormat("application/x-ndjson")).toBe("ndjson");
    expect(negotiateFormat("application/x-ndjson, multipart/mixed")).toBe("multipart");
    expect(negotiateFormat("Application/X-NDJSON;q=0.9")).toBe("ndjson");
    expect(negotiateFormat("multipart/*")).toBe("multipart");
    expect(negotiateFormat("multipart/mixed;q=0, application/x-ndjson")).toBe("ndjson");
    for (const bad of [undefined, "", "*/*", "text/plain", "multipart/form-data"]) {
      expect(() => negotiateFormat(bad)).toThrow(AppError);
    }
  });
});

function message(payload: Buffer, i: number): ReceivedMessage {
  return receivedMessage({
    messageId: `m${i}_AAAAAAAAAAAAAAAA`,
    receiptHandle: `handle-${i}`,
    deliveryCount: i + 1,
    contentType: i === 0 ? null : "text/plain",
    payload,
  });
}

describe("multipart rendering", () => {
  it("round-trips any payload through a real multipart parser, ending with the closing boundary", async () => {
    const payloads = [randomBytes(10_000), Buffer.from("\r\n--vqs-\r\n--\r\n"), Buffer.alloc(0)];
    const rendered = renderMultipart(payloads.map(message));
    const raw = await collect(rendered.body);
    const boundary = rendered.contentType.split("boundary=")[1]!;
    expect(raw.subarray(raw.length - boundary.length - 6).toString()).toBe(`--${boundary}--\r\n`);
    const res = new Response(raw, { headers: { "content-type": rendered.contentType } });
    const got: Array<{ headers: Headers; body: Buffer }> = [];
    for await (const p of parseMultipartStream(res)) {
      got.push({
        headers: p.headers,
        body: Buffer.from(await new Response(p.payload).arrayBuffer()),
      });
    }
    expect(got.map((g) => g.body.equals(payloads[got.indexOf(g)]!))).toEqual([true, true, true]);
    expect(got[0]!.headers.get("content-type")).toBe("application/octet-stream");
    expect(got[1]!.headers.get("vqs-delivery-count")).toBe("2");
    expect(got[1]!.headers.get("vqs-timestamp")).toBe("2023-11-14T22:13:20.000Z");
  });

  it("picks a boundary that no payload contains", () => {
    // A payload that contains every boundary the renderer might pick is impossible; check that
    // the chosen one is absent from a payload full of boundary-like text.
    const payload = Buffer.from(
      Array.from({ length: 100 }, () => `--vqs-${"0".repeat(36)}`).join("\r\n"),
    );
    const rendered = renderMultipart([message(payload, 1)]);
    const boundary = rendered.contentType.split("boundary=")[1]!;
    expect(payload.includes(boundary)).toBe(false);
  });

  it("renders NDJSON one message per line with a base64 body", async () => {
    const raw = (await collect(renderNdjson([message(Buffer.from([0, 1, 2]), 0)]).body)).toString();
    expect(raw.endsWith("\n")).toBe(true);
    expect(JSON.parse(raw)).toEqual({
      messageId: "m0_AAAAAAAAAAAAAAAA",
      receiptHandle: "handle-0",
      deliveryCount: 1,
      timestamp: "2023-11-14T22:13:20.000Z",
      expiresAt: "2023-11-15T22:13:20.000Z",
      contentType: "application/octet-stream",
      body: "AAEC",
    });
  });
});

describe("an abortable upload", () => {
  /** A full garbage collection (the flag is read when `gc` is looked up in a new context). */
  const gc = () => {
    setFlagsFromString("--expose-gc");
    (runInNewContext("gc") as () => void)();
  };

  it("holds none of the pieces it handed over (200 MiB through it, < 32 MiB kept)", async () => {
    const MiB = 1024 * 1024;
    async function* pieces() {
      for (let i = 0; i < 200; i++) yield await Promise.resolve(Buffer.alloc(MiB, i));
    }
    const signal = new UploadAbort();
    gc();
    const before = process.memoryUsage().arrayBuffers;
    let n = 0;
    let kept = 0;
    for await (const piece of abortable(pieces(), signal)) {
      n += piece.length;
      if (n === 190 * MiB) {
        gc();
        kept = process.memoryUsage().arrayBuffers - before;
      }
    }
    expect(n).toBe(200 * MiB);
    expect(kept).toBeLessThan(32 * MiB);
  });

  it("fails with the signal's reason while it waits for a piece", async () => {
    const abort = new UploadAbort();
    async function* stalled() {
      yield Buffer.from("a");
      await new Promise(() => {});
    }
    const it = abortable(stalled(), abort)[Symbol.asyncIterator]();
    expect((await it.next()).value).toEqual(Buffer.from("a"));
    const next = it.next();
    abort.abort(new AppError("request_timeout"));
    await expect(next).rejects.toMatchObject({ code: "request_timeout" });
  });
});

describe("an inline body read with the stream's events", () => {
  it("is the pieces joined, once the stream ends", async () => {
    const s = new PassThrough();
    const body = readInlineBody(s, 6, new UploadAbort());
    s.write("abc");
    s.end("def");
    expect((await body).toString()).toBe("abcdef");
    expect(s.listenerCount("data") + s.listenerCount("end") + s.listenerCount("close")).toBe(0);
  });

  it("is empty for an empty stream", async () => {
    const s = new PassThrough();
    const body = readInlineBody(s, 0, undefined);
    s.end();
    expect((await body).length).toBe(0);
  });

  it("fails with the signal's reason while it waits, and leaves the rest unread", async () => {
    const abort = new UploadAbort();
    const s = new PassThrough();
    const body = readInlineBody(s, 100, abort);
    s.write("a");
    await new Promise((r) => setImmediate(r));
    abort.abort(new AppError("request_timeout"));
    await expect(body).rejects.toMatchObject({ code: "request_timeout" });
    expect(s.isPaused()).toBe(true);
    expect(s.listenerCount("data")).toBe(0);
  });

  it("fails at once when the signal has already fired", async () => {
    const abort = new UploadAbort();
    abort.abort(new AppError("request_timeout"));
    await expect(readInlineBody(new PassThrough(), 1, abort)).rejects.toMatchObject({
      code: "request_timeout",
    });
  });

  it("fails with invalid_request_body when more than declared arrives", async () => {
    const s = new PassThrough();
    const body = readInlineBody(s, 2, undefined);
    s.write("abc");
    await expect(body).rejects.toMatchObject({ code: "invalid_request_body" });
  });

  it("fails with the stream's error, or a premature close, when the client goes away", async () => {
    const a = new PassThrough();
    const failed = readInlineBody(a, 10, undefined);
    a.destroy(new Error("aborted"));
    await expect(failed).rejects.toThrow("aborted");
    const b = new PassThrough();
    const closed = readInlineBody(b, 10, undefined);
    b.write("x");
    b.destroy();
    await expect(closed).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });
});

// Header values a publish keeps (Content-Type, the idempotency key, the message's own headers) are
// visible ASCII only (0x20-0x7E): anything else is refused with 400 and stores nothing, in a single
// publish and in each part of a batch; so is a header of the message's that a delivery writes
// itself (ce-*, Content-*). Found: a part's Content-Type holding U+010D U+010A was stored, and the
// receive answer's latin1 part head turned it into CR LF, forging a part header for consumers.
import { request as httpRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../../src/errors.js";
import { useGateways } from "../../helpers/fixture.js";
import { api, errorCode, errorCodeOf, parts, uniqueName } from "../../helpers/http.js";
import { TEAM_A_NAMESPACE } from "../../helpers/issuer.js";

/** Bodies above 1 KiB go to the body store: a batch part's streamed path is tried too. */
const f = useGateways(1, { config: { inlineBodyBytes: 1024 } });

/** U+010D U+010A: CR LF once each character is cut to its low byte (latin1). */
const FORGED = "text/plain\u010d\u010aVqs-Receipt-Handle: forged\u010d\u010aContent-Length: 1";
const BOUNDARY = "vqs-hostile-batch";

/** A batch body of parts given as [headers, body], written as UTF-8 (as fetch writes a string). */
function batchBody(partsOf: [Record<string, string>, string][]): string {
  return (
    partsOf
      .map(([h, b]) => {
        const head = Object.entries(h)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join("");
        return `--${BOUNDARY}\r\n${head}\r\n${b}\r\n`;
      })
      .join("") + `--${BOUNDARY}--\r\n`
  );
}

/**
 * A single publish over node:http, whose header values are written as latin1 bytes (fetch takes
 * none above 0x7F in a header): `value` is sent byte for byte.
 */
function publishRaw(
  base: string,
  token: string,
  topic: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; code: string | null }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}/api/v3/topic/${topic}`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-length": String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            code: errorCodeOf(Buffer.concat(chunks).toString()),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Every message of `topic`, received once by a new group: [content type, body] each. */
async function stored(q: ReturnType<typeof api>, topic: string): Promise<[string, string][]> {
  const group = uniqueName("g");
  const out: [string, string][] = [];
  for (;;) {
    const res = await q.receive(topic, group, { "vqs-max-messages": "10" });
    if (res.status === 204) return out;
    expect(res.status).toBe(200);
    for (const p of await parts(res)) {
      out.push([p.headers.get("content-type") ?? "", p.body.toString()]);
    }
  }
}

describe("header values a publish keeps", () => {
  it("refuses a batch part whose Content-Type or idempotency key is not visible ASCII, storing nothing of it", async () => {
    const q = api(f.gateways[0]!.url, await f.issuer.token());
    const topic = uniqueName("hdr-batch");
    const large = "L".repeat(4096); // above the inline limit: streamed to the body store
    const res = await q.call("POST", `${topic}/batch`, {
      headers: { "content-type": `multipart/mixed; boundary=${BOUNDARY}` },
      body: batchBody([
        [{ "content-type": "text/plain; charset=utf-8" }, "good"],
        [{ "content-type": FORGED }, "forged inline"],
        [{ "content-type": "text/plain", "vqs-idempotency-key": "clé-1" }, "bad key"],
        [{ "content-type": "text/plain", "vqs-idempotency-key": "k\u010d\u010ax" }, "bad key 2"],
        [{ "content-type": "text/plain;\tq=1" }, "a tab"],
        [{ "content-type": "text/plain", "x-app": "caf\u00e9" }, "own header"],
        [{ "content-type": "text/plain", "x-app": "a\u010d\u010aVqs-Receipt-Handle: x" }, "own 2"],
        [{ "content-type": "text/plain", "ce-vqsreceipthandle": "forged" }, "reserved"],
        [{ "content-type": "application/json" }, '"also good"'],
      ]),
    });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as {
      results: { status: string; statusCode?: number; error?: string }[];
    };
    const refused = (code: keyof typeof ERRORS) => ({
      status: "failed",
      statusCode: 400,
      error: ERRORS[code].message,
    });
    const naming = (text: string) => ({
      status: "failed",
      statusCode: 400,
      error: expect.stringContaining(text) as unknown as string,
    });
    expect(results).toMatchObject([
      { status: "sent" },
      refused("invalid_content_type"),
      refused("invalid_idempotency_key"),
      refused("invalid_idempotency_key"),
      refused("invalid_content_type"),
      // A part's result has no code: its message names the header.
      naming("header x-app must"),
      naming("header x-app must"),
      naming("ce-vqsreceipthandle is the service's own"),
      { status: "sent" },
    ]);
    // A batch's parts are published together: stored in any order.
    expect((await stored(q, topic)).sort()).toEqual([
      ["application/json", '"also good"'],
      ["text/plain; charset=utf-8", "good"],
    ]);

    // A large part (streamed to the body store) refused at its head is not read on: the batch
    // is refused whole with the part's code, and nothing of it is stored.
    const whole = await q.call("POST", `${topic}-large/batch`, {
      headers: { "content-type": `multipart/mixed; boundary=${BOUNDARY}` },
      body: batchBody([
        [{ "content-type": "text/plain" }, "good"],
        [{ "content-type": FORGED }, large],
        [{ "content-type": "text/plain" }, "after"],
      ]),
    });
    expect(whole.status).toBe(400);
    expect(await errorCode(whole)).toBe("invalid_content_type");
    expect(await stored(q, `${topic}-large`)).toEqual([]);
  });

  it("refuses a single publish whose Content-Type or idempotency key is not visible ASCII, storing nothing", async () => {
    const token = await f.issuer.token();
    const q = api(f.gateways[0]!.url, token);
    const topic = uniqueName("hdr-single");
    expect((await q.publish(topic, "kept", { "content-type": "text/plain" })).status).toBe(201);
    // U+010D U+010A as UTF-8 bytes (C4 8D C4 8A), and the same characters' latin1 forms.
    const utf8 = Buffer.from(FORGED, "utf8").toString("latin1");
    const cases: [Record<string, string>, string][] = [
      [{ "content-type": utf8 }, "invalid_content_type"],
      [{ "content-type": "text/plain\u00ff" }, "invalid_content_type"],
      [{ "content-type": "text/plain;\tcharset=utf-8" }, "invalid_content_type"],
      [
        { "vqs-idempotency-key": Buffer.from("clé", "utf8").toString("latin1") },
        "invalid_idempotency_key",
      ],
      [{ "vqs-idempotency-key": "k\u0085x" }, "invalid_idempotency_key"],
      [{ "vqs-idempotency-key": "a\tb" }, "invalid_idempotency_key"],
      [{ "x-app": Buffer.from("clé", "utf8").toString("latin1") }, "invalid_message_header"],
      [{ "x-app": "a\tb" }, "invalid_message_header"],
      [{ "ce-id": "forged" }, "reserved_message_header"],
      [{ "content-language": "en" }, "reserved_message_header"],
    ];
    for (const [headers, code] of cases) {
      expect(
        await publishRaw(f.gateways[0]!.url, token, topic, headers, "refused"),
        JSON.stringify(headers),
      ).toEqual({ status: 400, code });
    }
    // A large body (streamed to the body store) is refused the same, before it is read.
    expect(
      await publishRaw(
        f.gateways[0]!.url,
        token,
        topic,
        { "content-type": utf8 },
        "L".repeat(4096),
      ),
    ).toEqual({ status: 400, code: "invalid_content_type" });
    expect(await stored(q, topic)).toEqual([["text/plain", "kept"]]);
  });

  it("keeps every visible ASCII Content-Type and key as it was sent", async () => {
    const q = api(f.gateways[0]!.url, await f.issuer.token());
    const topic = uniqueName("hdr-ok");
    const visible = Array.from({ length: 0x7f - 0x21 }, (_, i) => String.fromCharCode(0x21 + i));
    const contentType = `application/vnd.a+json; profile="https://x.example/a?b=c&d=[1] {~}"`;
    const res = await q.publish(topic, "ok", {
      "content-type": contentType,
      "vqs-idempotency-key": `key ${visible.join("")}`,
    });
    expect(res.status).toBe(201);
    expect(await stored(q, topic)).toEqual([[contentType, "ok"]]);
  });

  it("never lets a stored value start a header line of an answer (a message kept from before the rule)", async () => {
    const q = api(f.gateways[0]!.url, await f.issuer.token());
    const topic = uniqueName("hdr-old");
    // Stored past the HTTP checks, as publish stored it before it refused such values.
    await f.gateways[0]!.gateway.queue.publish(
      { namespace: TEAM_A_NAMESPACE, topic },
      {
        payload: Buffer.from("old"),
        contentType: FORGED,
        retentionSeconds: 3600,
        delaySeconds: 0,
        idempotencyKey: null,
        trace: { traceparent: "00-\u010d\u010a", baggage: "a=\u010d\u010ab" },
        headers: { "x-ok": "1", "x-forged": "a\u010d\u010aVqs-Receipt-Handle: forged" },
      },
    );
    const res = await q.receive(topic, "mp");
    expect(res.status).toBe(200);
    const raw = Buffer.from(await res.arrayBuffer());
    const boundary = /boundary=(\S+)/.exec(res.headers.get("content-type")!)![1]!;
    const head = raw.toString("latin1").split("\r\n\r\n")[0]!.split("\r\n");
    // The part head is its boundary and eight visible ASCII header lines, none of them forged.
    expect(head[0]).toBe(`--${boundary}`);
    expect(head.slice(1).map((l) => l.split(":")[0])).toEqual([
      "Content-Type",
      "Vqs-Message-Id",
      "Vqs-Receipt-Handle",
      "Vqs-Delivery-Count",
      "Vqs-Timestamp",
      "Vqs-Expires-At",
      "x-ok",
      "Content-Length",
    ]);
    expect(head[1]).toBe("Content-Type: application/octet-stream");
    expect(head.every((l) => /^[\x20-\x7e]*$/.test(l))).toBe(true);
    expect(head).toContain("Content-Length: 3");
    const nd = await q.receive(topic, "nd", { accept: "application/x-ndjson" });
    expect(nd.status).toBe(200);
    const line = JSON.parse(await nd.text()) as { headers?: unknown };
    expect(line.headers).toEqual({ "x-ok": "1" });
    expect(line).toMatchObject({
      contentType: "application/octet-stream",
      body: Buffer.from("old").toString("base64"),
    });
  });
});

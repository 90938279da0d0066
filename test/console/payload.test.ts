// The console's payload preview (console/src/payload.ts) and how it ties an API error to a form
// field (console/src/api.ts): pure functions, tested without a browser.
import { describe, expect, it } from "vitest";
import { fieldOf } from "../../console/src/api.js";
import { AppError } from "../../src/errors.js";
import { parseTopicTarget } from "../../src/queue/settings/topic-pattern.js";
import { validateSettings } from "../../src/queue/settings/validate.js";
import {
  bytesToBase64,
  decodeText,
  hexDump,
  oneLine,
  renderPayload,
  renderPreview,
} from "../../console/src/payload.js";

const utf8 = (s: string) => new TextEncoder().encode(s);

describe("console payload preview", () => {
  it("pretty-prints a whole JSON payload", () => {
    const r = renderPayload(utf8('{"a":1,"b":[true,null]}'), "application/json");
    expect(r).toEqual({
      kind: "json",
      text: '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}',
      truncated: false,
    });
    // JSON without a JSON content type, by its look.
    expect(renderPayload(utf8("[1, 2]"), null).kind).toBe("json");
    expect(renderPayload(utf8('{"a":'), "application/json")).toMatchObject({ kind: "text" });
  });

  it("shows UTF-8 as text and anything else as hex", () => {
    expect(renderPayload(utf8("héllo\nwörld\t!"), "text/plain")).toEqual({
      kind: "text",
      text: "héllo\nwörld\t!",
      truncated: false,
    });
    const binary = new Uint8Array([0x00, 0x01, 0x41, 0xff, 0xfe]);
    const r = renderPayload(binary, "application/octet-stream");
    expect(r.kind).toBe("hex");
    expect(r.text).toBe("00000000  00 01 41 ff fe" + " ".repeat(36) + "|..A..|");
    // Valid UTF-8 with control characters is not text.
    expect(renderPayload(utf8("a\u0000b"), null).kind).toBe("hex");
  });

  it("treats a preview shorter than the message as cut: no JSON, a split character dropped", () => {
    const bytes = utf8('{"name":"é"}').subarray(0, 10); // ends inside "é"
    const r = renderPayload(bytes, "application/json", 300);
    expect(r).toEqual({ kind: "text", text: '{"name":"', truncated: true });
    expect(decodeText(bytes, false)).toBeNull();
  });

  it("renders the API's previews, text or base64", () => {
    expect(
      renderPreview({
        preview: '{"x":1}',
        previewEncoding: "utf8",
        contentType: "application/json",
        size: 7,
      }),
    ).toMatchObject({ kind: "json", text: '{\n  "x": 1\n}' });
    const bytes = new Uint8Array(Array.from({ length: 40 }, (_, i) => i * 7));
    const r = renderPreview({
      preview: bytesToBase64(bytes),
      previewEncoding: "base64",
      contentType: null,
      size: 4000,
    });
    expect(r).toMatchObject({ kind: "hex", truncated: true });
    expect(r.text.split("\n")).toHaveLength(3);
    expect(oneLine(r)).toBe("00 07 0e 15 1c 23 2a 31 38 3f 46 4d 54 5b 62 69…");
  });

  it("cuts long hex dumps and long lines", () => {
    const dump = hexDump(new Uint8Array(100), 32);
    expect(dump.split("\n")).toEqual([
      expect.stringMatching(/^00000000 /),
      expect.stringMatching(/^00000010 /),
      "… 68 more bytes",
    ]);
    expect(
      oneLine({ kind: "text", text: "a  b\n\nc".repeat(50), truncated: false }, 20),
    ).toHaveLength(20);
  });
});

describe("console error fields", () => {
  it("names the form field an API error is about", () => {
    expect(
      fieldOf("invalid_settings", "deadLetter.maxDeliveries must be an integer from 1 to 1000."),
    ).toBe("deadLetter.maxDeliveries");
    expect(fieldOf("invalid_settings", "Unknown field push.urll.")).toBe("push.urll");
    expect(fieldOf("invalid_settings", "push.url is required when push is given.")).toBe(
      "push.url",
    );
    expect(fieldOf("invalid_settings", "The settings must be a JSON object.")).toBeNull();
    expect(fieldOf("push_destination_not_allowed", "…")).toBe("push.url");
    expect(fieldOf("invalid_retention_seconds", "…")).toBe("retentionSeconds");
    expect(fieldOf("invalid_delay_seconds", "…")).toBe("delaySeconds");
    expect(fieldOf("topic_not_found", "…")).toBeNull();
  });

  it("names the flow-control field of each refusal the settings validation gives", () => {
    /** The field the console shows the gateway's refusal of `flowControl` beside. */
    const fieldOfRefusal = (flowControl: unknown): string | null => {
      try {
        validateSettings({ flowControl }, parseTopicTarget("jobs"));
      } catch (e) {
        if (e instanceof AppError && e.code === "invalid_settings") {
          return fieldOf(e.code, e.message);
        }
        throw e;
      }
      throw new Error(`accepted: ${JSON.stringify(flowControl)}`);
    };
    expect(fieldOfRefusal({ key: "", concurrency: 1 })).toBe("flowControl.key");
    expect(fieldOfRefusal({ key: "content-type", concurrency: 1 })).toBe("flowControl.key");
    expect(fieldOfRefusal({ key: "tenant", concurrency: 0 })).toBe("flowControl.concurrency");
    expect(fieldOfRefusal({ key: "tenant", concurrency: "2" })).toBe("flowControl.concurrency");
    expect(fieldOfRefusal({ key: "tenant" })).toBe("flowControl");
    expect(fieldOfRefusal({ key: "tenant", ordered: true, concurrency: 2 })).toBe(
      "flowControl.ordered",
    );
    expect(fieldOfRefusal({ key: "tenant", rate: { limit: 10 } })).toBe("flowControl.rate.limit");
    expect(fieldOfRefusal({ key: "tenant", rate: { limit: 10, periodSeconds: 0 } })).toBe(
      "flowControl.rate.periodSeconds",
    );
    expect(
      fieldOfRefusal({ key: "tenant", rate: { limit: 10, periodSeconds: 60, burst: 0 } }),
    ).toBe("flowControl.rate.burst");
    expect(fieldOfRefusal({ key: "tenant", rate: { limit: 1, periodSeconds: 86400 } })).toBe(
      "flowControl.rate",
    );
    expect(fieldOfRefusal({ key: "tenant", concurrency: 1, x: 1 })).toBe("flowControl.x");
  });
});

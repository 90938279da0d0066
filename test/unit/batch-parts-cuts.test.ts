// BatchParts reads the same parts whatever the reads' boundaries: a valid batch body cut at
// every place, and at every two places, gives the events of the body read whole (header values
// trimmed, the closing delimiter's dashes not taken for a new part).
import { describe, expect, it } from "vitest";
import { BatchParts } from "../../src/http/encoding/batch-parts.js";

async function events(pieces: Buffer[], contentType: string): Promise<string> {
  const reader = new BatchParts(
    (async function* () {
      for (const p of pieces) yield await Promise.resolve(p);
    })(),
    contentType,
  );
  const out: string[] = [];
  let part = "";
  try {
    for (let e = await reader.next(); e; e = await reader.next()) {
      if (e.kind === "part") part = JSON.stringify(e.headers);
      else if (e.kind === "data") part += Buffer.from(e.chunk).toString();
      else if (e.kind === "end") out.push(part);
      else out.push("unreadable");
    }
  } catch (err) {
    out.push(`failed: ${(err as Error).message}`);
  }
  return out.join(" | ");
}

describe("batch parts, cut anywhere", () => {
  for (const boundary of ["b-7", "x-"]) {
    it(`boundary ${boundary}: every one and two cuts read as the whole body`, async () => {
      const body = Buffer.from(
        `--${boundary}\r\nContent-Type: text/plain\r\nVqs-Idempotency-Key: key-1\r\n\r\nhe--o-\r\n` +
          `--${boundary}\r\nContent-Type: application/json\r\n\r\n{"a":1}\r\n--${boundary}--\r\n`,
      );
      const type = `multipart/mixed; boundary=${boundary}`;
      const whole = await events([body], type);
      expect(whole).toBe(
        '{"content-type":"text/plain","vqs-idempotency-key":"key-1"}he--o- | {"content-type":"application/json"}{"a":1}',
      );
      const wrong: string[] = [];
      for (let i = 1; i < body.length; i++) {
        if ((await events([body.subarray(0, i), body.subarray(i)], type)) !== whole)
          wrong.push(`${i}`);
        for (let j = i + 1; j < body.length; j++) {
          const cut = [body.subarray(0, i), body.subarray(i, j), body.subarray(j)];
          if ((await events(cut, type)) !== whole) wrong.push(`${i},${j}`);
        }
      }
      expect(wrong).toEqual([]);
    });
  }
});

// BatchParts reads nothing on without bound: bytes that belong to no readable part (a preamble,
// the body of a part whose headers cannot be read) are skipped up to `maxSkip`, and past that the
// body is refused as broken instead of being read to its end.
import { describe, expect, it } from "vitest";
import { BatchParts } from "../../src/http/encoding/batch-parts.js";

const TYPE = "multipart/mixed; boundary=b-7";

/** The events' kinds, and what broke the read; counts the pieces read from the source. */
async function read(body: Buffer, maxSkip?: number) {
  let pulled = 0;
  const source = (async function* () {
    for (let i = 0; i < body.length; i += 64 * 1024) {
      pulled++;
      yield await Promise.resolve(body.subarray(i, i + 64 * 1024));
    }
  })();
  const reader = new BatchParts(source, TYPE, maxSkip);
  const kinds = new Set<string>();
  try {
    for (let e = await reader.next(); e; e = await reader.next()) kinds.add(e.kind);
    return { kinds: [...kinds].sort(), failure: null, pulled };
  } catch (err) {
    return { kinds: [...kinds].sort(), failure: (err as { code?: string }).code ?? "?", pulled };
  }
}

const unreadable = (size: number) =>
  Buffer.concat([
    Buffer.from("--b-7\r\nno header line here\r\n\r\n"),
    Buffer.alloc(size, 0x61),
    Buffer.from("\r\n--b-7\r\nContent-Type: text/plain\r\n\r\nok\r\n--b-7--\r\n"),
  ]);

describe("batch parts: skipped bytes", () => {
  it("skips a small unreadable part and reads on", async () => {
    const r = await read(unreadable(10_000), 1024 * 1024);
    expect(r.failure).toBeNull();
    expect(r.kinds).toEqual(["data", "end", "part", "unreadable"]);
  });

  it("refuses a body whose unreadable part passes maxSkip, without reading the rest", async () => {
    const body = unreadable(8 * 1024 * 1024);
    const r = await read(body, 1024 * 1024);
    expect(r.failure).toBe("invalid_batch");
    expect(r.kinds).toEqual(["unreadable"]);
    expect(r.pulled).toBeLessThan(body.length / (64 * 1024) / 2);
  });

  it("refuses a preamble longer than maxSkip", async () => {
    const body = Buffer.concat([Buffer.alloc(4 * 1024 * 1024, 0x61), unreadable(10)]);
    const r = await read(body, 1024 * 1024);
    expect(r.failure).toBe("invalid_batch");
    expect(r.kinds).toEqual([]);
  });
});

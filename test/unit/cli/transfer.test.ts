// The CLI's streamed transfers: a multipart answer is read from the network no faster than a
// slow consumer takes its bytes (a 100 MB body is never held), a cut answer fails its part instead
// of ending it as whole, saveBody leaves no file for a failed body, the stall timeout, and the
// progress line in bytes.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { progressLine } from "../../../src/cli/terminal/progress.js";
import { multipartParts } from "../../../src/cli/transfer/multipart-reader.js";
import { saveBody } from "../../../src/cli/transfer/save-body.js";
import { StallTimeout } from "../../../src/cli/transfer/stall-timeout.js";

const noPaint = (_c: unknown, s: string) => s;
const BOUNDARY = "b0undary";
const CHUNK = 64 * 1024;

/** A multipart answer of `bodies`, produced 64 KiB at a time on demand; `pulled` counts bytes. */
function answer(bodies: readonly Buffer[], cutAfter?: number) {
  const pieces: Buffer[] = [];
  bodies.forEach((b, i) => {
    pieces.push(
      Buffer.from(`--${BOUNDARY}\r\nVqs-Message-Id: m${i}\r\nContent-Length: ${b.length}\r\n\r\n`),
      b,
      Buffer.from("\r\n"),
    );
  });
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  const all = Buffer.concat(pieces);
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (cutAfter !== undefined && state.pulled >= cutAfter) {
          controller.error(new TypeError("terminated"));
          return;
        }
        if (state.pulled >= all.length) return controller.close();
        const c = all.subarray(state.pulled, state.pulled + CHUNK);
        state.pulled += c.length;
        controller.enqueue(c);
      },
    },
    { highWaterMark: 0 },
  );
  const res = new Response(stream, {
    headers: { "content-type": `multipart/mixed; boundary=${BOUNDARY}` },
  });
  return { res, state };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "vqs-transfer-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("multipartParts", () => {
  it("reads ahead of a slow consumer by about 1 MiB at most, and every byte arrives", async () => {
    const bodies = [randomBytes(20 * 1024 * 1024), randomBytes(3 * 1024 * 1024)];
    const { res, state } = answer(bodies);
    let ahead = 0;
    const got: { id: string | null; sha: string }[] = [];
    for await (const part of multipartParts(res)) {
      const hash = createHash("sha256");
      let taken = 0;
      const before = state.pulled;
      for await (const chunk of part.payload) {
        hash.update(chunk);
        taken += chunk.length;
        ahead = Math.max(ahead, state.pulled - before - taken);
        await new Promise((r) => setImmediate(r)); // a slow consumer
      }
      got.push({ id: part.headers.get("vqs-message-id"), sha: hash.digest("hex") });
    }
    expect(got).toEqual(
      bodies.map((b, i) => ({
        id: `m${i}`,
        sha: createHash("sha256").update(b).digest("hex"),
      })),
    );
    expect(ahead).toBeLessThan(1024 * 1024 + 2 * CHUNK);
  });

  it("a part its consumer leaves unread is skipped, and the next one follows", async () => {
    const { res } = answer([randomBytes(300_000), Buffer.from("second")]);
    const seen: string[] = [];
    for await (const part of multipartParts(res)) {
      const id = part.headers.get("vqs-message-id")!;
      seen.push(id);
      if (id === "m1")
        expect(
          Buffer.from(await new Response(toStream(part.payload)).arrayBuffer()).toString(),
        ).toBe("second");
    }
    expect(seen).toEqual(["m0", "m1"]);
  });

  it("a connection cut inside a body fails it, and saveBody leaves no file behind", async () => {
    const { res } = answer([randomBytes(2 * 1024 * 1024)], 1024 * 1024);
    const file = join(dir, "cut.bin");
    const attempt = (async () => {
      for await (const part of multipartParts(res)) await saveBody(part.payload, file, null);
    })();
    await expect(attempt).rejects.toThrow(/broke off|terminated/);
    expect(await readdir(dir)).not.toContain("cut.bin");
    expect((await readdir(dir)).filter((f) => f.endsWith(".part"))).toEqual([]);
  });
});

describe("saveBody", () => {
  it("writes the bytes with their size and SHA-256; a short body is refused and removed", async () => {
    const body = randomBytes(100_000);
    const saved = await saveBody(chunks(body), join(dir, "ok.bin"), body.length);
    expect(saved).toEqual({
      file: join(dir, "ok.bin"),
      size: body.length,
      sha256: createHash("sha256").update(body).digest("hex"),
    });
    expect((await readFile(join(dir, "ok.bin"))).equals(body)).toBe(true);
    await expect(saveBody(chunks(body), join(dir, "short.bin"), body.length + 1)).rejects.toThrow(
      /ended after 100000 of 100001 bytes/,
    );
    expect(await readdir(dir)).not.toContain("short.bin");
  });
});

describe("StallTimeout", () => {
  it("aborts only when nothing moved for its time", async () => {
    const stall = new StallTimeout(120);
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 60));
      stall.touch();
    }
    expect(stall.signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 250));
    expect(stall.signal.aborted).toBe(true);
    expect((stall.signal.reason as DOMException).name).toBe("TimeoutError");
  });
});

describe("progress line in bytes", () => {
  it("shows sizes and a rate in binary units", () => {
    const line = progressLine(
      { value: 40 * 1024 * 1024, total: 100 * 1024 * 1024 },
      { columns: 100, paint: noPaint, seconds: 4, label: "", unit: "bytes" },
    );
    expect(line).toMatch(/\] 40\.0 MiB\/100\.0 MiB {2}40% {2}10\.0 MiB\/s {2}ETA 6s$/);
  });
});

function chunks(b: Buffer): AsyncIterable<Uint8Array> {
  return Readable.from(
    Array.from({ length: Math.ceil(b.length / 7000) }, (_, i) =>
      b.subarray(i * 7000, i * 7000 + 7000),
    ),
  );
}

function toStream(it: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = it[Symbol.asyncIterator]();
  return new ReadableStream({
    async pull(c) {
      const r = await iterator.next();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
  });
}

// Reads a multipart/mixed answer part by part, each part's payload streamed, with back-pressure:
// mixpart (the parser @vercel/queue uses) reads its source as fast as it can and queues what a
// slow consumer has not taken yet, so its source here is a gate that reads from the network
// only while less than AHEAD bytes of the current part wait to be taken. A 100 MB body written to
// a slow disk is then never held in memory.
import { parseMultipartStream } from "mixpart";
import type { ReadableStreamReadResult } from "node:stream/web";

/** Bytes of a part read from the network before the consumer took them, at most. */
const AHEAD = 1024 * 1024;
/** mixpart counts the next network read into its header limit: larger than any read. */
const PARSER = { maxHeaderSize: 1024 * 1024 };

export interface StreamedPart {
  readonly headers: Headers;
  /** The payload's bytes, pulled from the network as they are taken. Read it to its end. */
  readonly payload: AsyncIterable<Uint8Array>;
}

/**
 * The parts of `res` (multipart/mixed). `onBytes` hears of every network read (a stall timeout,
 * say). A connection that ends or fails inside a part fails that part's payload: a cut body is
 * never read as a whole one.
 */
export async function* multipartParts(
  res: Response,
  onBytes: (bytes: number) => void = () => undefined,
): AsyncGenerator<StreamedPart> {
  if (!res.body) throw new Error("the answer has no body");
  const reader = res.body.getReader();
  let passed = 0; // bytes handed to the parser since the current part began
  let taken = 0; // of those, payload bytes the consumer took
  let gated = false; // a part is being read: the gate applies
  // Resolves the gate's wait once the consumer took bytes (or the part ended).
  const gate: { wake: (() => void) | null } = { wake: null };
  const open = () => {
    const w = gate.wake;
    gate.wake = null;
    w?.();
  };
  const source = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (gated && passed - taken > AHEAD) {
          await new Promise<void>((r) => (gate.wake = r));
        }
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          // mixpart takes an AbortError or TimeoutError for a normal end and would close the
          // part as if complete: every read failure reaches it as a plain error instead.
          const why = err instanceof Error ? err.message : String(err);
          controller.error(new Error(`the download broke off: ${why}`));
          return;
        }
        if (chunk.done) return controller.close();
        passed += chunk.value.length;
        onBytes(chunk.value.length);
        controller.enqueue(chunk.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  const contentType = res.headers.get("content-type") ?? "";
  const parsed = parseMultipartStream(
    new Response(source, { headers: { "content-type": contentType } }),
    PARSER,
  );
  for await (const part of parsed) {
    passed = 0;
    taken = 0;
    gated = true;
    const payloadReader = part.payload.getReader();
    let finished = false;
    const payload = {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const r = await payloadReader.read();
          if (r.done) break;
          taken += r.value.length;
          open();
          yield r.value;
        }
        finished = true;
      },
    };
    yield { headers: part.headers, payload };
    gated = false;
    open();
    // A part its consumer left unread is read to its end here, so the next one can follow.
    if (!finished) for await (const _ of payload) void _;
  }
}

// A batch publish's multipart/mixed body read part by part as it streams (multipasta): the
// request is read one piece at a time, and only when the route asks for the next event, so a
// part's bytes are read as fast as they are stored (back-pressure) and no part is held whole.
import { make, type MultipartError, type Parser } from "multipasta";
import { AppError } from "../../errors.js";

export type BatchEvent =
  /** A part begins: its headers (names in lower case). */
  | { readonly kind: "part"; readonly headers: Record<string, string> }
  /** A part whose headers could not be read (none, or too many): its bytes are skipped. */
  | { readonly kind: "unreadable" }
  | { readonly kind: "data"; readonly chunk: Uint8Array }
  /** The part begun last has ended. */
  | { readonly kind: "end" };

const broken = (cause?: unknown) =>
  new AppError("invalid_batch", {
    message: "The batch body is not a complete multipart/mixed body.",
    cause,
  });

/** The `boundary` parameter of a multipart Content-Type, or null. */
export function boundaryOf(contentType: string): string | null {
  const m = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

export class BatchParts {
  readonly #pieces: AsyncIterator<Uint8Array>;
  readonly #parser: Parser;
  #events: BatchEvent[] = [];
  #done = false;
  /** A framing error, or the request stream's own (a disconnect, a stalled upload): sticky. */
  #failure: Error | null = null;
  /** Bytes read since the last event: what is skipped (a preamble, an unreadable part's body). */
  #skipped = 0;

  /**
   * `maxSkip`: bytes read past without an event (a preamble, the body of a part whose headers
   * could not be read) before the body is refused as broken: nothing is read on without bound.
   */
  constructor(
    source: AsyncIterable<Uint8Array>,
    contentType: string,
    private readonly maxSkip = Infinity,
  ) {
    this.#pieces = source[Symbol.asyncIterator]();
    const push = (e: BatchEvent) => {
      if (!this.#done) this.#events.push(e);
    };
    this.#parser = make({
      headers: { "content-type": contentType },
      // Every part is a "file" to the parser: handed over piece by piece, never collected.
      isFile: () => true,
      onFile: (info) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(info.headers)) {
          // Trimmed: the parser keeps the space after the colon when a read ends right there
          // (an HTTP header value's surrounding whitespace is not part of it anyway).
          headers[k] = (Array.isArray(v) ? v.join(", ") : v).trim();
        }
        push({ kind: "part", headers });
        return (chunk) => push(chunk ? { kind: "data", chunk } : { kind: "end" });
      },
      onField: () => undefined,
      onError: (err: MultipartError) => {
        // A part's bad headers skip that part alone; anything else breaks the body.
        if (err._tag === "BadHeaders" || err._tag === "InvalidDisposition") {
          push({ kind: "unreadable" });
        } else if (!this.#done) {
          this.#failure ??= broken(err._tag);
        }
      },
      onDone: () => {
        this.#done = true;
      },
    });
  }

  /**
   * A read's last one or two bytes when they are `-`, kept for the next read: the parser takes
   * the closing delimiter's `--` cut between its two dashes for a new part. Where reads end
   * changes nothing else, so holding two bytes back is safe.
   */
  #carry: Uint8Array | null = null;

  #write(piece: Uint8Array): void {
    let data = this.#carry ? Buffer.concat([this.#carry, piece]) : piece;
    this.#carry = null;
    let keep = 0;
    while (keep < 2 && keep < data.length && data[data.length - 1 - keep] === 0x2d) keep++;
    if (keep > 0) {
      this.#carry = data.subarray(data.length - keep);
      data = data.subarray(0, data.length - keep);
    }
    if (data.length > 0) this.#parser.write(data);
  }

  /** The next event, or null after the close delimiter. Throws the body's failure. */
  async next(): Promise<BatchEvent | null> {
    for (;;) {
      const e = this.#events.shift();
      if (e) return e;
      if (this.#failure) throw this.#failure;
      if (this.#done) return null;
      let r: IteratorResult<Uint8Array>;
      try {
        r = await this.#pieces.next();
      } catch (err) {
        this.#failure = err instanceof Error ? err : new Error(String(err));
        throw this.#failure;
      }
      if (r.done) {
        if (this.#carry) this.#parser.write(this.#carry);
        this.#carry = null;
        this.#parser.end();
        if (!this.#done) this.#failure ??= broken();
        continue;
      }
      this.#write(r.value);
      if (this.#events.length > 0) {
        this.#skipped = 0;
      } else if ((this.#skipped += r.value.length) > this.maxSkip) {
        this.#failure ??= new AppError("invalid_batch", {
          message: `More than ${this.maxSkip} bytes of the batch body belong to no part that can be read (a preamble, or a part without readable headers); the rest is not read.`,
        });
      }
    }
  }

  /**
   * After the close delimiter: reads what follows it (an epilogue, or just the request's end),
   * at most `maxBytes`. False: more than that, or the request broke; the caller ends the
   * connection instead of reading on (a keep-alive connection would stall on it otherwise).
   */
  async finish(maxBytes: number): Promise<boolean> {
    let seen = 0;
    for (;;) {
      let r: IteratorResult<Uint8Array>;
      try {
        r = await this.#pieces.next();
      } catch {
        return false;
      }
      if (r.done) return true;
      seen += r.value.length;
      if (seen > maxBytes) return false;
    }
  }
}

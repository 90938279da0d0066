// How many body parts a multipart body delimits, counted on its bytes (RFC 2046 section 5.1.1):
// a delimiter is `--boundary` at the body's start or after CRLF, not followed by `--` (that is
// the close delimiter). The batch route checks the parser's part count against it, so that a
// part the parser skipped (mixpart 0.0.6 skips every other part that has no headers) refuses the
// batch instead of leaving a message out of a 200 answer.

/** The `boundary` parameter of a multipart Content-Type, or null. */
export function boundaryOf(contentType: string): string | null {
  const m = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

/** The number of delimiters (parts) before the close delimiter, or before the end. */
export function countParts(body: Buffer, boundary: string): number {
  const dash = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // A delimiter's `--boundary` starts 2 bytes into a CRLF-led match.
  const next = (from: number) => {
    const i = body.indexOf(delimiter, from);
    return i < 0 ? -1 : i + 2;
  };
  let n = 0;
  let at = body.subarray(0, dash.length).equals(dash) ? 0 : next(0);
  while (at >= 0) {
    const after = at + dash.length;
    if (body[after] === 0x2d && body[after + 1] === 0x2d) return n; // `--boundary--`: the end
    n++;
    at = next(after);
  }
  return n;
}

// The load generator's HTTP side: keep-alive connections to one or more gateways, requests spread
// round-robin over them, and a minimal multipart/mixed reader for receive responses.
// node:http with a keep-alive Agent: Node's fetch cost the load generator about four times the
// CPU per request, and the load generator shares the machine's cores with the gateway and NATS.
import * as http from "node:http";

export interface HttpResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
}

export interface HttpClient {
  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: Buffer,
  ): Promise<HttpResponse>;
  close(): void;
}

/** No request may take longer than this; a stuck one counts as an error. */
const REQUEST_TIMEOUT_MS = 30_000;

export function createHttpClient(bases: readonly string[]): HttpClient {
  if (bases.length === 0) throw new Error("no gateway URL");
  const targets = bases.map((b) => {
    const u = new URL(b);
    return {
      host: u.hostname,
      port: Number(u.port),
      agent: new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 }),
    };
  });
  let next = 0;
  return {
    request(method, path, headers, body) {
      const t = targets[next++ % targets.length]!;
      return new Promise<HttpResponse>((resolve, reject) => {
        const req = http.request(
          {
            host: t.host,
            port: t.port,
            method,
            path,
            agent: t.agent,
            headers: { ...headers, "content-length": String(body?.length ?? 0) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("error", reject);
            res.on("end", () =>
              resolve({
                status: res.statusCode ?? 0,
                contentType: res.headers["content-type"] ?? "",
                body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
              }),
            );
          },
        );
        req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error("request timeout")));
        req.on("error", reject);
        req.end(body);
      });
    },
    close() {
      for (const t of targets) t.agent.destroy();
    },
  };
}

export interface Part {
  readonly headers: ReadonlyMap<string, string>;
  readonly payload: Buffer;
}

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");
/** More parts than a receive can return (10) by far; bounds the reader's loop. */
const MAX_PARTS = 1000;

/** Reads a multipart/mixed body (the gateway writes Content-Length in every part). */
export function parseMultipart(contentType: string, body: Buffer): Part[] {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw new Error(`not multipart: ${contentType}`);
  const delim = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let pos = body.indexOf(delim);
  while (pos >= 0 && parts.length < MAX_PARTS) {
    pos += delim.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // closing delimiter
    const headerStart = pos + CRLF.length;
    const headerEnd = body.indexOf(HEADER_END, headerStart);
    if (headerEnd < 0) throw new Error("multipart part without a header end");
    const headers = new Map<string, string>();
    for (const line of body.toString("latin1", headerStart, headerEnd).split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0)
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const start = headerEnd + HEADER_END.length;
    const length = Number(headers.get("content-length") ?? NaN);
    let end: number;
    if (Number.isSafeInteger(length)) {
      end = start + length;
    } else {
      end = body.indexOf(Buffer.concat([CRLF, delim]), start);
      if (end < 0) throw new Error("multipart part without an end");
    }
    parts.push({ headers, payload: body.subarray(start, end) });
    pos = body.indexOf(delim, end);
  }
  return parts;
}

// HTTP helpers for tests: requests against a gateway, and a real multipart parser (mixpart, the
// one the public client uses) for responses.
import { parseMultipartStream } from "mixpart";
import { randomUUID } from "node:crypto";

export type Body = NonNullable<RequestInit["body"]>;

export interface Part {
  headers: Headers;
  body: Buffer;
}

export function uniqueName(prefix = "t"): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function api(base: string, token: string, extra: Record<string, string> = {}) {
  const call = (
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: Body } = {},
  ) =>
    fetch(`${base}/api/v3/topic/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...extra, ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
  return {
    call,
    publish: (topic: string, body: Body, headers: Record<string, string> = {}) =>
      call("POST", encodeURIComponent(topic), { body, headers }),
    receive: (topic: string, group: string, headers: Record<string, string> = {}) =>
      call("POST", `${topic}/consumer/${group}`, {
        headers: { accept: "multipart/mixed", ...headers },
      }),
    receiveById: (topic: string, group: string, id: string, headers: Record<string, string> = {}) =>
      call("POST", `${topic}/consumer/${group}/id/${encodeURIComponent(id)}`, {
        headers: { accept: "multipart/mixed", ...headers },
      }),
    ack: (topic: string, group: string, handle: string) =>
      call("DELETE", `${topic}/consumer/${group}/lease/${encodeURIComponent(handle)}`),
    extend: (topic: string, group: string, handle: string, seconds: unknown) =>
      call("PATCH", `${topic}/consumer/${group}/lease/${encodeURIComponent(handle)}`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ visibilityTimeoutSeconds: seconds }),
      }),
    /**
     * Batch publish of text bodies, each part with a Content-Type (as the real client sends it)
     * and the same extra headers.
     */
    publishBatch: (topic: string, bodies: string[], headers: Record<string, string> = {}) => {
      const head = Object.entries({ "content-type": "text/plain", ...headers })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      return call("POST", `${encodeURIComponent(topic)}/batch`, {
        headers: { "content-type": "multipart/mixed; boundary=vqs-test-batch" },
        body:
          bodies.map((b) => `--vqs-test-batch\r\n${head}\r\n${b}\r\n`).join("") +
          "--vqs-test-batch--\r\n",
      });
    },
  };
}

/**
 * mixpart's header limit counts the next socket chunk too (up to 64 KiB over plain HTTP), so a
 * response above 64 KiB fails to parse when a read ends inside a part's header (docs/operations.md,
 * Troubleshooting). The tests read such responses: the limit here is larger than any chunk.
 */
const PARSER = { maxHeaderSize: 1024 * 1024 };

export async function parts(res: Response): Promise<Part[]> {
  const out: Part[] = [];
  for await (const p of parseMultipartStream(res, PARSER)) {
    out.push({
      headers: p.headers,
      body: Buffer.from(await new Response(p.payload).arrayBuffer()),
    });
  }
  return out;
}

export async function errorCode(res: Response): Promise<string> {
  const body = (await res.json()) as { error?: { code?: string } };
  return body.error?.code ?? "(none)";
}

/** The error code of an answer's body read as text (node:http clients); null when none. */
export function errorCodeOf(text: string): string | null {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    return null; // not JSON
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

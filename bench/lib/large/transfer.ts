// Large bodies through the gateway's HTTP API, streamed on the load generator's side too: an
// upload writes the body in 64 KiB slices as the socket takes them (with Content-Length, or
// chunked without it), a download parses the multipart answer as it arrives (mixpart, the
// parser @vercel/queue uses) and hashes the part's bytes without keeping them.
import { parseMultipartStream } from "mixpart";
import { createHash } from "node:crypto";
import * as http from "node:http";

const SLICE = 64 * 1024;
/** mixpart counts the next socket read into its header limit (see test/helpers/http.ts). */
const PARSER = { maxHeaderSize: 1024 * 1024 };

export interface GatewayTarget {
  readonly url: string;
  readonly token: string;
  readonly timeoutMs: number;
}

export interface UploadResult {
  readonly status: number;
  readonly messageId: string | null;
  readonly body: string;
}

/** A POST of `path` to the gateway on a connection of its own, with the bearer token. */
function post(
  t: GatewayTarget,
  path: string,
  headers: Record<string, string>,
  timeoutMs?: number,
): http.ClientRequest {
  const u = new URL(path, t.url);
  return http.request({
    host: u.hostname,
    port: Number(u.port),
    method: "POST",
    path: u.pathname,
    agent: false,
    headers: { authorization: `Bearer ${t.token}`, ...headers },
    ...(timeoutMs ? { timeout: timeoutMs } : {}),
  });
}

/** POST /api/v3/topic/{topic} with `body` streamed; `contentLength` false: chunked. */
export function uploadBody(
  t: GatewayTarget,
  topic: string,
  body: Uint8Array,
  o: { contentLength: boolean; retentionSeconds?: number; signal?: AbortSignal },
): Promise<UploadResult> {
  return new Promise((resolve, reject) => {
    const req = post(t, `/api/v3/topic/${encodeURIComponent(topic)}`, {
      "content-type": "application/octet-stream",
      ...(o.retentionSeconds ? { "vqs-retention-seconds": String(o.retentionSeconds) } : {}),
      ...(o.contentLength ? { "content-length": String(body.length) } : {}),
    });
    const timer = setTimeout(() => req.destroy(new Error("upload timeout")), t.timeoutMs);
    const abort = () => req.destroy(new Error("upload aborted"));
    if (o.signal?.aborted) abort();
    o.signal?.addEventListener("abort", abort, { once: true });
    req.on("close", () => o.signal?.removeEventListener("abort", abort));
    let answered = false;
    req.on("error", (err) => {
      clearTimeout(timer);
      if (!answered) reject(err);
    });
    req.on("response", (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString();
        let messageId: string | null = null;
        try {
          messageId = (JSON.parse(text) as { messageId?: string }).messageId ?? null;
        } catch {
          // an error page: the status and text say what happened
        }
        resolve({ status: res.statusCode ?? 0, messageId, body: text.slice(0, 300) });
      });
    });
    // An early answer (413, 401) ends the writing loop.
    void (async () => {
      for (let off = 0; off < body.length && !answered && !req.destroyed; off += SLICE) {
        if (!req.write(body.subarray(off, off + SLICE))) {
          await new Promise<void>((r) => {
            const done = () => {
              req.off("drain", done);
              req.off("close", done);
              r();
            };
            req.once("drain", done);
            req.once("close", done);
          });
        }
      }
      if (!req.destroyed) req.end();
    })();
  });
}

export interface DownloadResult {
  readonly status: number;
  readonly bytes: number;
  readonly sha256: string | null;
  readonly messageId: string | null;
  readonly receiptHandle: string | null;
}

/**
 * Receives one message of `group` (multipart/mixed, one message at most) and hashes its body as
 * it streams in; `messageId`: receive that message by ID instead.
 */
export async function downloadBody(
  t: GatewayTarget,
  topic: string,
  group: string,
  messageId?: string,
): Promise<DownloadResult> {
  const path =
    `/api/v3/topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}` +
    (messageId ? `/id/${encodeURIComponent(messageId)}` : "");
  const res = await fetch(new URL(path, t.url), {
    method: "POST",
    headers: {
      authorization: `Bearer ${t.token}`,
      accept: "multipart/mixed",
      "vqs-max-messages": "1",
      "vqs-visibility-timeout-seconds": "600",
    },
    signal: AbortSignal.timeout(t.timeoutMs),
  });
  if (res.status !== 200) {
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status, bytes: 0, sha256: null, messageId: null, receiptHandle: null };
  }
  for await (const part of parseMultipartStream(res, PARSER)) {
    const hash = createHash("sha256");
    let bytes = 0;
    for await (const chunk of part.payload as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      bytes += chunk.length;
    }
    const result = {
      status: 200,
      bytes,
      sha256: hash.digest("hex"),
      messageId: part.headers.get("vqs-message-id"),
      receiptHandle: part.headers.get("vqs-receipt-handle"),
    };
    // Only one part was asked for: leaving the loop ends the response.
    return result;
  }
  return { status: 200, bytes: 0, sha256: null, messageId: null, receiptHandle: null };
}

/** DELETE .../lease/{handle}: the downloaded message is done with. */
export async function acknowledge(
  t: GatewayTarget,
  topic: string,
  group: string,
  handle: string,
): Promise<number> {
  const res = await fetch(
    new URL(
      `/api/v3/topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}/lease/${encodeURIComponent(handle)}`,
      t.url,
    ),
    { method: "DELETE", headers: { authorization: `Bearer ${t.token}` } },
  );
  await res.arrayBuffer();
  return res.status;
}

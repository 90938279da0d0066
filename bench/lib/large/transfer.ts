// Large bodies through the gateway's HTTP API, streamed on the load generator's side too: an
// upload writes the body in 64 KiB slices as the socket takes them (with Content-Length), a download parses the multipart answer as it arrives (mixpart, the
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

/** POST /api/v3/topic/{topic} with `body` streamed, on a connection of its own. */
export function uploadBody(
  t: GatewayTarget,
  topic: string,
  body: Uint8Array,
  retentionSeconds?: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`/api/v3/topic/${encodeURIComponent(topic)}`, t.url);
    const req = http.request({
      host: u.hostname,
      port: Number(u.port),
      method: "POST",
      path: u.pathname,
      agent: false,
      headers: {
        authorization: `Bearer ${t.token}`,
        "content-type": "application/octet-stream",
        "content-length": String(body.length),
        ...(retentionSeconds ? { "vqs-retention-seconds": String(retentionSeconds) } : {}),
      },
    });
    const timer = setTimeout(() => req.destroy(new Error("upload timeout")), t.timeoutMs);
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
        const text = Buffer.concat(chunks).toString().slice(0, 300);
        resolve({ status: res.statusCode ?? 0, body: text });
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

interface DownloadResult {
  readonly status: number;
  readonly bytes: number;
  readonly sha256: string | null;
  readonly receiptHandle: string | null;
}

/** Receives one message of `group` (multipart/mixed) and hashes its body as it streams in. */
export async function downloadBody(
  t: GatewayTarget,
  topic: string,
  group: string,
): Promise<DownloadResult> {
  const path = `/api/v3/topic/${encodeURIComponent(topic)}/consumer/${encodeURIComponent(group)}`;
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
    return { status: res.status, bytes: 0, sha256: null, receiptHandle: null };
  }
  for await (const part of parseMultipartStream(res, PARSER)) {
    const hash = createHash("sha256");
    let bytes = 0;
    for await (const chunk of part.payload as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      bytes += chunk.length;
    }
    // Only one part was asked for: leaving the loop ends the response.
    return {
      status: 200,
      bytes,
      sha256: hash.digest("hex"),
      receiptHandle: part.headers.get("vqs-receipt-handle"),
    };
  }
  return { status: 200, bytes: 0, sha256: null, receiptHandle: null };
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

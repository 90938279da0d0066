// Outbound push requests (the PushTransport port) on undici, Node's own HTTP client: one Agent
// keeps a keep-alive connection pool per destination origin, with no cap on connections per
// origin, so a slow endpoint holds only its own requests (each group's concurrency is bounded by
// the pusher) and never queues another group's pushes behind them. Redirects are never followed;
// the whole exchange is bounded by the push's timeout; at most RESPONSE_CAP bytes of an answer
// are read, the rest is dropped with the connection.
import { Agent, errors, request } from "undici";
import type { PushResponse, PushTransport } from "../queue/push/push-ports.js";

/** How much of a push answer is read (and thrown away): handlers answer with small JSON. */
const RESPONSE_CAP = 4096;

export class PushClient implements PushTransport {
  readonly #agent = new Agent({
    connections: null,
    keepAliveTimeout: 4000,
    keepAliveMaxTimeout: 60_000,
    connect: { timeout: 10_000 },
  });

  async post(
    url: string,
    headers: Readonly<Record<string, string>>,
    body: Uint8Array,
    timeoutMs: number,
  ): Promise<PushResponse> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(url, {
        dispatcher: this.#agent,
        method: "POST",
        headers: { ...headers, "content-length": String(body.length) },
        body,
        signal,
        maxRedirections: 0,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      await res.body.dump({ limit: RESPONSE_CAP }).catch(() => undefined);
      return { outcome: outcomeOf(res.statusCode), status: res.statusCode };
    } catch (err) {
      return { outcome: isTimeout(err, signal) ? "timeout" : "connection_error", status: null };
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

function outcomeOf(status: number): PushResponse["outcome"] {
  if (status >= 200 && status < 300) return "success";
  if (status >= 500) return "http_5xx";
  if (status >= 400) return "http_4xx";
  return "http_3xx";
}

function isTimeout(err: unknown, signal: AbortSignal): boolean {
  return (
    signal.aborted ||
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError ||
    err instanceof errors.ConnectTimeoutError
  );
}

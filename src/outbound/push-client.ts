// Outbound push requests (the PushTransport port) on undici, Node's own HTTP client: one Agent
// keeps a keep-alive connection pool per destination origin, with no cap on connections per
// origin, so a slow endpoint holds only its own requests (each group's concurrency is bounded by
// the pusher) and never queues another group's pushes behind them. Redirects are never followed;
// the whole exchange is bounded by the push's timeout; at most RESPONSE_CAP bytes of an answer
// are read, the rest is dropped with the connection. Each connection's host name is resolved
// once and its addresses checked before it connects (push-address-policy.ts); a refused one
// ends the push as `blocked`, nothing sent.
//
// Requests go through the Agent's low-level `dispatch` with a handler of our own rather than
// `undici.request()`: a push needs only the status, and request() builds an AbortSignal
// listener, an async resource and a body stream per request, which cost more gateway CPU than
// the rest of the request (measured: 74-80 µs of client CPU per POST against 163-172 µs).
import { Agent, errors, type Dispatcher } from "undici";
import type { PushResponse, PushTransport } from "../queue/push-delivery/push-ports.js";
import {
  checkedLookup,
  PUSH_ADDRESS_REFUSED,
  type PushAddressPolicy,
  type PushResolver,
} from "./push-address-policy.js";

/** How much of a push answer is read (and thrown away): handlers answer with small JSON. */
const RESPONSE_CAP = 4096;
/** Parsed push URLs remembered (a few per pushed group); forgotten all at once when full. */
const MAX_TARGETS = 10_000;

interface Target {
  readonly origin: string;
  readonly path: string;
}

export interface PushClientOptions {
  /** Which addresses a destination's name may resolve to. */
  readonly policy: PushAddressPolicy;
  /** How names are resolved (the system resolver by default; tests give their own). */
  readonly resolve?: PushResolver;
}

export class PushClient implements PushTransport {
  readonly #agent: Agent;
  readonly #targets = new Map<string, Target | null>();

  constructor(options: PushClientOptions) {
    this.#agent = new Agent({
      connections: null,
      keepAliveTimeout: 4000,
      keepAliveMaxTimeout: 60_000,
      // The socket connects to the addresses this lookup checked, never to a second answer.
      connect: { timeout: 10_000, lookup: checkedLookup(options.policy, options.resolve) },
      maxRedirections: 0, // dispatch never follows redirects: a 3xx is the push's answer
    });
  }

  post(
    url: string,
    headers: Readonly<Record<string, string>>,
    body: Uint8Array,
    timeoutMs: number,
  ): Promise<PushResponse> {
    const target = this.#target(url);
    if (!target) return Promise.resolve({ outcome: "connection_error", status: null });
    return new Promise((resolve) => {
      const exchange = new Exchange(resolve, timeoutMs);
      try {
        this.#agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: "POST",
            // No content-length of ours: undici writes it from the body (the same bytes on
            // the wire), and the headers record is passed as it is, not copied per push.
            headers,
            body,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
          },
          exchange,
        );
      } catch (err) {
        exchange.onError(err as Error);
      }
    });
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  #target(url: string): Target | null {
    let t = this.#targets.get(url);
    if (t === undefined) {
      try {
        const u = new URL(url);
        t =
          u.protocol === "http:" || u.protocol === "https:"
            ? { origin: u.origin, path: `${u.pathname}${u.search}` }
            : null;
      } catch {
        t = null;
      }
      if (this.#targets.size >= MAX_TARGETS) this.#targets.clear();
      this.#targets.set(url, t);
    }
    return t;
  }
}

/** One push's exchange: the status, the answer read up to the cap, and its deadline. */
class Exchange implements Dispatcher.DispatchHandlers {
  readonly #resolve: (r: PushResponse) => void;
  readonly #timer: NodeJS.Timeout;
  #abort: ((err?: Error) => void) | null = null;
  #status: number | null = null;
  #received = 0;
  #timedOut = false;
  #done = false;

  constructor(resolve: (r: PushResponse) => void, timeoutMs: number) {
    this.#resolve = resolve;
    // The whole exchange (connection, request, answer) within the push's timeout.
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      // Not yet on a connection: onConnect aborts it when it gets one.
      this.#abort?.(new errors.RequestAbortedError("push timeout"));
      this.#end();
    }, timeoutMs);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#timedOut) abort(new errors.RequestAbortedError("push timeout"));
  }

  onHeaders(statusCode: number): boolean {
    if (statusCode >= 200) this.#status = statusCode; // 1xx: informational, more to come
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.#received += chunk.length;
    // Enough read: the answer is decided by its status; the connection is dropped.
    if (this.#received > RESPONSE_CAP) this.#abort?.(new errors.RequestAbortedError("answer cap"));
    return true;
  }

  onComplete(): void {
    this.#end();
  }

  onError(err: Error): void {
    this.#end(err);
  }

  onUpgrade(): void {
    // Never asked for (no Upgrade header, no CONNECT); undici fails such an answer itself.
  }

  /**
   * The outcome, once: by the status when one came (a failure or the deadline while reading
   * the rest of the answer does not change it), else a timeout or a connection error.
   */
  #end(err?: Error): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    const status = this.#status;
    if (status !== null) this.#resolve({ outcome: outcomeOf(status), status });
    else if (err !== undefined && isRefusedAddress(err)) {
      this.#resolve({ outcome: "blocked", status: null });
    } else if (this.#timedOut || (err !== undefined && isTimeout(err))) {
      this.#resolve({ outcome: "timeout", status: null });
    } else this.#resolve({ outcome: "connection_error", status: null });
  }
}

function outcomeOf(status: number): PushResponse["outcome"] {
  if (status >= 200 && status < 300) return "success";
  if (status >= 500) return "http_5xx";
  if (status >= 400) return "http_4xx";
  return "http_3xx";
}

function isTimeout(err: unknown): boolean {
  return (
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError ||
    err instanceof errors.ConnectTimeoutError
  );
}

/** Whether a connection failed because its name resolved to an address not allowed. */
function isRefusedAddress(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    if ((e as { code?: unknown }).code === PUSH_ADDRESS_REFUSED) return true;
    if (e instanceof AggregateError && e.errors.some(isRefusedAddress)) return true;
    e = e.cause;
  }
  return false;
}

// The workload's HTTP client: each call writes its invocation to the history, sends the request
// to one gateway, and writes its completion (status, message IDs, deliveries), also when the
// connection failed (status 0) or the request outlived the client's bound (status -1).
import { parseMultipartStream } from "mixpart";
import { labelOf, sha256 } from "./payload.js";
import type {
  Complete,
  Delivered,
  HistoryWriter,
  Invoke,
  Operation,
  Unstamped,
} from "./check/history.js";

/** A request still unanswered after this long is abandoned (and reported if nothing excuses it). */
export const CLIENT_BOUND_MS = 30_000;
/** mixpart counts the next socket read into its header limit: larger than any read. */
const PARSER = { maxHeaderSize: 1024 * 1024 };

export interface Target {
  readonly url: string;
}

type Fields = Omit<Complete, "type" | "id" | "t">;

export class RecordingClient {
  readonly #history: HistoryWriter;
  readonly #gateways: readonly Target[];
  readonly #topic: string;
  #token: string;

  constructor(history: HistoryWriter, gateways: readonly Target[], topic: string, token: string) {
    this.#history = history;
    this.#gateways = gateways;
    this.#topic = topic;
    this.#token = token;
  }

  get topic(): string {
    return this.#topic;
  }

  get token(): string {
    return this.#token;
  }

  setToken(token: string): void {
    this.#token = token;
  }

  /** `payload`: a large body's bytes (`body` is then its label); else `body` is the payload. */
  publish(
    proc: string,
    gw: number,
    key: string | null,
    body: string,
    delay: number,
    payload?: Buffer,
    extra: Record<string, string> = {},
  ) {
    const headers: Record<string, string> = {
      "content-type": payload ? "application/octet-stream" : "text/plain",
      ...extra,
    };
    if (key !== null) headers["vqs-idempotency-key"] = key;
    if (delay > 0) headers["vqs-delay-seconds"] = String(delay);
    const bytes = payload ?? body;
    const op = {
      f: "publish",
      key,
      body,
      delay,
      sha256: sha256(bytes),
      size: Buffer.byteLength(bytes),
    } as const;
    return this.#call(proc, gw, op, async (signal) => {
      const res = await this.#fetch(gw, "POST", this.#topic, { headers, body: bytes, signal });
      const text = await res.text();
      const fields: Fields = { status: res.status };
      if (res.status === 201) {
        return { ...fields, messageId: (JSON.parse(text) as { messageId: string }).messageId };
      }
      return res.status >= 400 ? { ...fields, error: text.slice(0, 200) } : fields;
    });
  }

  receive(proc: string, gw: number, group: string, max: number, lease: number) {
    return this.#call(proc, gw, { f: "receive", group, max, lease }, async (signal) => {
      const res = await this.#fetch(gw, "POST", `${this.#topic}/consumer/${group}`, {
        headers: {
          accept: "multipart/mixed",
          "vqs-max-messages": String(max),
          "vqs-visibility-timeout-seconds": String(lease),
        },
        signal,
      });
      if (res.status !== 200) {
        const text = await res.text();
        return res.status >= 400
          ? { status: res.status, error: text.slice(0, 200) }
          : { status: res.status };
      }
      const messages: Delivered[] = [];
      try {
        for await (const p of parseMultipartStream(res, PARSER)) {
          const bytes = Buffer.from(await new Response(p.payload).arrayBuffer());
          messages.push({
            id: p.headers.get("vqs-message-id") ?? "",
            handle: p.headers.get("vqs-receipt-handle") ?? "",
            count: Number(p.headers.get("vqs-delivery-count")),
            body: labelOf(bytes),
            sha256: sha256(bytes),
            size: bytes.length,
          });
        }
      } catch (err) {
        // The body broke off: what arrived was still handed out to this client.
        return { status: 0, messages, error: `body: ${String(err)}` };
      }
      return { status: 200, messages };
    });
  }

  ack(proc: string, gw: number, group: string, handle: string, messageId: string) {
    return this.#call(proc, gw, { f: "ack", group, handle, messageId }, async (signal) => {
      const res = await this.#fetch(
        gw,
        "DELETE",
        `${this.#topic}/consumer/${group}/lease/${encodeURIComponent(handle)}`,
        { signal },
      );
      const text = await res.text();
      return res.status >= 400
        ? { status: res.status, error: text.slice(0, 200) }
        : { status: res.status };
    });
  }

  /** Stores a group's settings (setup, not recorded: the history holds the workload only). */
  async putSettings(gw: number, group: string, settings: unknown): Promise<number> {
    const res = await this.#fetch(gw, "PUT", `${this.#topic}/consumer/${group}/settings`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(settings),
      signal: AbortSignal.timeout(CLIENT_BOUND_MS),
    });
    await res.text();
    return res.status;
  }

  readyz(proc: string, gw: number) {
    return this.#call(proc, gw, { f: "readyz" }, async (signal) => {
      const res = await fetch(`${this.#gateways[gw]!.url}/readyz`, { signal });
      await res.text();
      return { status: res.status };
    });
  }

  #fetch(
    gw: number,
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: string | Buffer; signal: AbortSignal },
  ): Promise<Response> {
    return fetch(`${this.#gateways[gw]!.url}/api/v3/topic/${path}`, {
      method,
      headers: { authorization: `Bearer ${this.#token}`, ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal: init.signal,
    });
  }

  async #call(
    proc: string,
    gw: number,
    op: Operation,
    send: (signal: AbortSignal) => Promise<Fields>,
  ): Promise<Complete> {
    const id = this.#history.nextId();
    const invoke = { type: "invoke", id, proc, gw, ...op } as Unstamped<Invoke>;
    this.#history.write(invoke);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), CLIENT_BOUND_MS);
    let fields: Fields;
    try {
      fields = await send(abort.signal);
    } catch (err) {
      fields = abort.signal.aborted
        ? { status: -1, error: "no answer within the client's bound" }
        : { status: 0, error: describe(err) };
    } finally {
      clearTimeout(timer);
    }
    const done: Omit<Complete, "t"> = { type: "complete", id, ...fields };
    this.#history.write(done);
    return { ...done, t: this.#history.now() };
  }
}

function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  return [e.message, e.cause?.code ?? e.cause?.message].filter(Boolean).join(": ");
}

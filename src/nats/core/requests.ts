// Request-reply for the hot path (publishes into streams, acks and naks), on one inbox
// subscription per connection. nats.js's `request` allocates, per call, a random token, a timer
// and an Error it throws away on success (RequestOne.cancel); at thousands of requests per second
// that was a tenth of the gateway's CPU (docs/performance.md). Here a request is a map entry,
// and one sweep every 50 ms ends the ones that timed out. Replies and "no responders" statuses
// come back on `<inbox>.<n>`; nats.js resubscribes the inbox after a reconnect.
import { createInbox, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";

/** Nobody subscribes to the subject (the server answered 503): a stream or consumer is gone. */
export class NoRespondersError extends Error {
  constructor(subject: string) {
    super(`no responders for ${subject}`);
    this.name = "NoRespondersError";
  }
}

export class RequestTimeoutError extends Error {
  constructor(subject: string, ms: number) {
    super(`no reply from ${subject} within ${ms} ms (timeout)`);
    this.name = "TimeoutError";
  }
}

/** A JetStream API error in a publish acknowledgement (`{"error": {...}}`). */
export class PubAckError extends Error {
  readonly code: number;
  constructor(description: string, code: number) {
    super(description);
    this.name = "PubAckError";
    this.code = code;
  }
}

export interface PubAck {
  readonly stream: string;
  readonly seq: number;
  readonly duplicate: boolean;
}

interface Pending {
  readonly subject: string;
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly resolve: (m: Msg) => void;
  readonly reject: (e: Error) => void;
}

const SWEEP_MS = 50;

/** One decoder for every acknowledgement (a TextDecoder per publish was an object and a lookup). */
const DECODER = new TextDecoder();

export class Requests {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #sweeper: NodeJS.Timeout | null = null;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
    this.#prefix = `${createInbox()}.`;
    nc.subscribe(`${this.#prefix}*`, {
      callback: (_err, msg) => {
        const id = Number(msg.subject.slice(this.#prefix.length));
        const p = this.#pending.get(id);
        if (!p) return; // timed out already
        this.#pending.delete(id);
        if (msg.headers?.code === 503 && msg.data.length === 0) {
          p.reject(new NoRespondersError(p.subject));
        } else {
          p.resolve(msg);
        }
      },
    });
  }

  request(
    subject: string,
    payload: Uint8Array | string,
    timeoutMs: number,
    headers?: MsgHdrs,
  ): Promise<Msg> {
    const id = ++this.#next;
    return new Promise<Msg>((resolve, reject) => {
      this.#pending.set(id, {
        subject,
        deadline: Date.now() + timeoutMs,
        timeoutMs,
        resolve,
        reject,
      });
      this.#sweep();
      try {
        this.#nc.publish(
          subject,
          payload,
          headers ? { reply: `${this.#prefix}${id}`, headers } : { reply: `${this.#prefix}${id}` },
        );
      } catch (err) {
        this.#pending.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Publishes into a stream and reads its acknowledgement (what `js.publish` does). */
  async publish(
    subject: string,
    payload: Uint8Array,
    timeoutMs: number,
    headers: MsgHdrs,
  ): Promise<PubAck> {
    const msg = await this.request(subject, payload, timeoutMs, headers);
    const ack = JSON.parse(DECODER.decode(msg.data)) as {
      stream?: string;
      seq?: number;
      duplicate?: boolean;
      error?: { err_code?: number; code?: number; description?: string };
    };
    if (ack.error) {
      throw new PubAckError(
        ack.error.description ?? "publish failed",
        ack.error.err_code ?? ack.error.code ?? 0,
      );
    }
    if (typeof ack.seq !== "number" || typeof ack.stream !== "string") {
      throw new Error(`not a publish acknowledgement from ${subject}`);
    }
    return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true };
  }

  /** Fails what is pending (the connection is closing). */
  close(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
    for (const p of this.#pending.values()) p.reject(new Error("connection closing"));
    this.#pending.clear();
  }

  #sweep(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, p] of this.#pending) {
        if (p.deadline <= now) {
          this.#pending.delete(id);
          p.reject(new RequestTimeoutError(p.subject, p.timeoutMs));
        }
      }
      if (this.#pending.size === 0 && this.#sweeper) {
        clearInterval(this.#sweeper);
        this.#sweeper = null;
      }
    }, SWEEP_MS);
    this.#sweeper.unref();
  }
}

// Raw JetStream pulls on one shared inbox subscription. nats.js's consumer fetch has no `no_wait`
// (an immediate receive must not wait a second for an empty topic), so pulls are sent by hand to
// $JS.API.CONSUMER.MSG.NEXT. Replies come back two ways: status replies (404, 408, 409, 503) on the
// pull's own inbox subject, but messages under their original subject, naming their consumer only
// in the ack reply subject. A consumer serves its pulls in order, so messages go to the oldest
// unfinished pull of their consumer, and a status ends the pull its inbox token names.
import {
  createInbox,
  type Msg,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";

export type PullEnd = "done" | "no_consumer" | "timeout";

export interface PullResult {
  readonly messages: Msg[];
  readonly end: PullEnd;
}

interface Waiter {
  readonly token: string;
  readonly consumerKey: string;
  readonly messages: Msg[];
  readonly onMessage: ((msg: Msg) => void) | undefined;
  delivered: number;
  readonly batch: number;
  readonly resolve: (r: PullResult) => void;
  readonly timer: NodeJS.Timeout;
}

export class PullClient {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #sub: Subscription;
  readonly #waiters = new Map<string, Waiter>();
  /** Unfinished pulls per "stream.consumer", oldest first. */
  readonly #queues = new Map<string, Waiter[]>();
  #next = 0;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
    this.#prefix = createInbox();
    this.#sub = nc.subscribe(`${this.#prefix}.*`, {
      callback: (_err, msg) => this.#route(msg),
    });
  }

  /**
   * Pulls up to `batch` messages. With `noWait`, answers as soon as the consumer has nothing more;
   * otherwise waits up to `expiresMs` for messages to arrive. Always bounded on this side too
   * (`expiresMs` + 1 s): a server at max_ack_pending does not answer a no_wait pull at all.
   */
  pull(
    stream: string,
    consumer: string,
    batch: number,
    options: {
      noWait: boolean;
      expiresMs: number;
      /** Hands each message over as it arrives instead of collecting them. */
      onMessage?: (msg: Msg) => void;
    },
  ): Promise<PullResult> {
    const token = (this.#next++).toString(36);
    const inbox = `${this.#prefix}.${token}`;
    return new Promise<PullResult>((resolve) => {
      const messages: Msg[] = [];
      const timer = setTimeout(() => this.#finish(token, "timeout"), options.expiresMs + 1000);
      const consumerKey = `${stream}.${consumer}`;
      const waiter: Waiter = {
        token,
        consumerKey,
        messages,
        onMessage: options.onMessage,
        delivered: 0,
        batch,
        resolve,
        timer,
      };
      this.#waiters.set(token, waiter);
      const queue = this.#queues.get(consumerKey);
      if (queue) queue.push(waiter);
      else this.#queues.set(consumerKey, [waiter]);
      // An immediate pull carries no `expires`: with one, nats-server 2.9 turns `no_wait` into
      // "wait until expires for the first message" instead of answering 404 at once.
      const request = JSON.stringify(
        options.noWait
          ? { batch, no_wait: true }
          : { batch, expires: options.expiresMs * 1_000_000 },
      );
      this.#nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, request, {
        reply: inbox,
      });
    });
  }

  close(): void {
    this.#sub.unsubscribe();
    for (const token of [...this.#waiters.keys()]) this.#finish(token, "timeout");
  }

  #route(msg: Msg): void {
    if (msg.reply?.startsWith("$JS.ACK.")) {
      const waiter = this.#queues.get(consumerKeyOf(msg.reply))?.[0];
      // No pull waits for it (it outlived its pull's time bound): its lease simply runs out.
      if (!waiter) return;
      if (waiter.onMessage) waiter.onMessage(msg);
      else waiter.messages.push(msg);
      if (++waiter.delivered >= waiter.batch) this.#finish(waiter.token, "done");
      return;
    }
    const code = msg.headers?.code ?? 0;
    if (code === 100) return; // idle heartbeat
    const token = msg.subject.slice(this.#prefix.length + 1);
    // 404 no messages and 408 request expired are "done"; 503 means there is no such consumer.
    this.#finish(token, code === 503 ? "no_consumer" : "done");
  }

  #finish(token: string, end: PullEnd): void {
    const waiter = this.#waiters.get(token);
    if (!waiter) return;
    this.#waiters.delete(token);
    const queue = this.#queues.get(waiter.consumerKey);
    const at = queue?.indexOf(waiter) ?? -1;
    if (queue && at >= 0) queue.splice(at, 1);
    if (queue?.length === 0) this.#queues.delete(waiter.consumerKey);
    clearTimeout(waiter.timer);
    waiter.resolve({ messages: waiter.messages, end });
  }
}

/** "stream.consumer" of an ack reply subject (v1 form, and v2 with domain and account hash). */
function consumerKeyOf(reply: string): string {
  const t = reply.split(".");
  return t.length >= 11 ? `${t[4]}.${t[5]}` : `${t[2]}.${t[3]}`;
}

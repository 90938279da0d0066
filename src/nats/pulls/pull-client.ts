// Raw JetStream pulls. nats.js's consumer fetch has no `no_wait` (an immediate receive must not
// wait a second for an empty topic), so pulls are sent by hand to $JS.API.CONSUMER.MSG.NEXT.
// Each pull has its own inbox subscription, as nats.js's fetch does: pulled messages arrive under
// their original subject, so only the subscription can tell which pull they answer. A message
// that arrives after its pull ended (it outlived the client-side bound) is released at once with
// -NAK instead of staying leased to nobody.
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";

/** done: the server answered (messages, 404, 408); no_consumer: 503, nobody serves the consumer;
 * timeout: the client-side bound passed without an answer. */
export type PullEnd = "done" | "no_consumer" | "timeout";

export interface PullResult {
  readonly messages: Msg[];
  readonly end: PullEnd;
}

/** How long a finished pull's inbox still catches (and releases) late messages. */
const LATE_CATCH_MS = 5000;

export class PullClient {
  readonly #nc: NatsConnection;
  /** Ends of the pulls under way, so close() can end them at once. */
  readonly #active = new Set<(end: PullEnd) => void>();

  constructor(nc: NatsConnection) {
    this.#nc = nc;
  }

  /** Ends every pull under way (their messages are released as they arrive). */
  close(): void {
    for (const finish of [...this.#active]) finish("timeout");
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
    return new Promise<PullResult>((resolve) => {
      const messages: Msg[] = [];
      let delivered = 0;
      let finished = false;
      const inbox = createInbox();
      const finish = (end: PullEnd) => {
        if (finished) return;
        finished = true;
        this.#active.delete(finish);
        clearTimeout(timer);
        resolve({ messages, end });
        // A message the server sent before it saw our end is still in flight: catch and release.
        setTimeout(() => sub.unsubscribe(), end === "timeout" ? LATE_CATCH_MS : 0).unref();
      };
      const sub = this.#nc.subscribe(inbox, {
        callback: (_err, msg) => {
          if (msg.reply?.startsWith("$JS.ACK.")) {
            if (finished) {
              msg.respond("-NAK");
              return;
            }
            if (options.onMessage) options.onMessage(msg);
            else messages.push(msg);
            if (++delivered >= batch) finish("done");
            return;
          }
          const code = msg.headers?.code ?? 0;
          if (code === 100) return; // idle heartbeat
          // 404 no messages and 408 request expired are "done"; 503 means no such consumer.
          finish(code === 503 ? "no_consumer" : "done");
        },
      });
      const timer = setTimeout(() => finish("timeout"), options.expiresMs + 1000);
      this.#active.add(finish);
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
}

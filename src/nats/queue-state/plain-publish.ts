// A plain publish (no idempotency key, no delay, to a stream the gateway has) as one pending
// request: its reply settles the publish. Stepping through admission, the stream, the request
// and the acknowledgement made a promise per step, about ten per publish; this makes none
// beyond the publish's own (the broker's `publish`; docs/architecture.md, "Publish").
import type { Msg, MsgHdrs } from "@nats-io/transport-node";
import type { NewMessage, PublishOutcome } from "../../queue/broker.js";
import { isNoResponders } from "../core/errors.js";
import type { TopicNames } from "../core/naming.js";
import { parsePubAck, type PendingReply } from "../core/requests.js";

/** What a plain publish needs of the broker (made once per broker: no closures per publish). */
export interface PlainPublishContext {
  /** Counts a stored message (quotas, read-your-write). */
  stored(names: TopicNames, bytes: number): void;
  /** Times the publish (vqs_jetstream_request_duration_seconds). */
  observe(seconds: number): void;
  /** A failure as the client sees it (and counted, when the store's). */
  failure(err: unknown): Error;
  /** The publish found its stream gone: it goes on as the steps do after such a first try. */
  gone(
    names: TopicNames,
    message: NewMessage,
    headers: MsgHdrs,
    err: Error,
  ): Promise<PublishOutcome>;
}

export class PlainPublish implements PendingReply {
  readonly subject: string;
  readonly deadline: number;

  constructor(
    readonly timeoutMs: number,
    readonly ctx: PlainPublishContext,
    readonly names: TopicNames,
    readonly message: NewMessage,
    readonly headers: MsgHdrs,
    readonly started: number,
    readonly done: (o: PublishOutcome | Promise<PublishOutcome>) => void,
    readonly fail: (e: Error) => void,
  ) {
    this.subject = names.ready;
    this.deadline = Date.now() + timeoutMs;
  }

  resolve(msg: Msg): void {
    let seq;
    try {
      seq = parsePubAck(this.subject, msg).seq;
    } catch (err) {
      this.#failed(err);
      return;
    }
    this.ctx.stored(this.names, this.message.payload.byteLength);
    this.#observe();
    this.done({ kind: "stored", seq });
  }

  reject(err: Error): void {
    if (isNoResponders(err)) {
      this.done(this.ctx.gone(this.names, this.message, this.headers, err));
      return;
    }
    this.#failed(err);
  }

  #failed(err: unknown): void {
    this.#observe();
    this.fail(this.ctx.failure(err));
  }

  #observe(): void {
    this.ctx.observe((performance.now() - this.started) / 1000);
  }
}

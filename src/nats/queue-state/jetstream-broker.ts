// The Broker port on JetStream: a topic is a stream, a consumer group a durable pull consumer on
// its ready subject, a lease the consumer's ack-wait moved by `-NAK {delay}`, deduplication
// `Nats-Msg-Id`. See docs/architecture.md for the data flow of each call.
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { JetStreamApiCodes } from "@nats-io/jetstream";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { AppError, isAppError } from "../../errors.js";
import type {
  Broker,
  Delivery,
  GroupProgress,
  LeaseRef,
  MessageLookup,
  NewMessage,
  PublishOutcome,
  StoredMessage,
  DeliveryTaker,
  Feed,
  GroupStart,
  UploadQuota,
} from "../../queue/broker.js";
import type { ConsumerFeed } from "../pulls/consumer-feed.js";
import type { GroupAddress, TopicAddress } from "../../queue/namespace.js";
import { ackSubject } from "../messages/ack-subject.js";
import { toDelivery } from "../messages/deliveries.js";
import type { DelayScheduler } from "../scheduling/delay-scheduler.js";
import {
  isApiError,
  isMessageGone,
  isNoResponders,
  isStreamFull,
  StreamGoneError,
  toStorageError,
  withDeadline,
  writeFailureCause,
  type WriteFailureCause,
} from "../core/errors.js";
import type { GroupEpochs } from "./topics/group-epochs.js";
import { currentGet, directGet, leaderGet } from "../messages/reads.js";
import { RequestTimeoutError, type PubAck, type Requests } from "../core/requests.js";
import type { IdempotencyKeys } from "./keys/idempotency-keys.js";
import { decodeMessage, encodeHeaders, keyToken, rfc3339ToMs } from "../messages/message-codec.js";
import { groupNames, topicNames, type GroupNames, type TopicNames } from "../core/naming.js";
import type { PullClient } from "../pulls/pull-client.js";
import type { Topology } from "./topics/topology.js";
import type { TenantAdmission } from "../../queue/admission/stored/tenant-admission.js";
import type { StorageQuotas } from "./usage/storage-quotas.js";
import { topicFull } from "../../queue/admission/stored/byte-quotas.js";

export interface JetStreamBrokerDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly topology: Topology;
  readonly quotas: StorageQuotas;
  /** Caps per tenant: its bytes, all deployments together. */
  readonly tenants: TenantAdmission;
  readonly pulls: PullClient;
  readonly scheduler: DelayScheduler;
  readonly keys: IdempotencyKeys;
  readonly epochs: GroupEpochs;
  /** Request-reply for publishes and acks (one inbox, no per-request timers). */
  readonly requests: Requests;
  /** Waiting pulls shared with the pusher (long polling). */
  readonly feed: ConsumerFeed;
  /** Send Nats-TTL with every message (the streams allow per-message TTL). */
  readonly messageTtl: boolean;
  readonly region: string;
  readonly requestTimeoutMs: number;
  /** Receives the duration of every store operation. */
  readonly observe: (operation: string, seconds: number) => void;
  /** Told of every publish the store did not take, with why. */
  readonly observeWriteFailure: (cause: WriteFailureCause) => void;
  /** False while the connection to NATS is down: publishes then fail at once (and fail over). */
  readonly isConnected: () => boolean;
  /**
   * Told of every acknowledgement the store confirmed (a group's cursor delivery): the push feeds
   * free the namespace's and group's slot of a push whose handler acknowledged before answering.
   */
  readonly acked?: (group: GroupAddress, streamSeq: number) => void;
}

/** Publishes that found their stream gone, tried again after it is back (each a removal). */
const STREAM_GONE_TRIES = 3;

/** Client-side bound of an immediate pull (the server normally answers at once). */
const PULL_EXPIRES_MS = 2000;

/**
 * nats-server 2.9 sends a publish's ack before it tells the stream's consumers about the message,
 * so a pull right after a 201 can miss it. A receive that finds nothing on a topic this gateway
 * published to this recently pulls once more (measured: that second pull always sees it).
 */
const READ_YOUR_WRITE_MS = 100;

/** The body of every acknowledgement, encoded once (a string would be encoded per ack). */
const ACK_BODY = new TextEncoder().encode("+ACK");

export class JetStreamBroker implements Broker {
  readonly #d: JetStreamBrokerDeps;
  /** Stream -> when this gateway last stored a message in it (bounded: pruned as it grows). */
  readonly #lastPublish = new Map<string, number>();

  constructor(deps: JetStreamBrokerDeps) {
    this.#d = deps;
  }

  leaseMsOf(group: GroupAddress): number {
    return this.#d.topology.ackWaitMs(groupNames(this.#d.region, group));
  }

  publish(topic: TopicAddress, message: NewMessage): Promise<PublishOutcome> {
    const names = topicNames(this.#d.region, topic);
    const delayed = message.delaySeconds > 0;
    const extra: Record<string, string> = { "Nats-Expected-Stream": names.stream };
    if (message.dedupToken !== undefined)
      extra["Nats-Msg-Id"] = `t.${keyToken(message.dedupToken)}`;
    if (this.#d.messageTtl) extra["Nats-TTL"] = String(message.retentionSeconds);
    const headers = encodeHeaders(message, extra);
    const send = (msgID?: string) => {
      if (msgID !== undefined) headers.set("Nats-Msg-Id", msgID);
      return this.#d.requests.publish(
        delayed ? names.delayed : names.ready,
        message.payload,
        this.#d.requestTimeoutMs,
        headers,
      );
    };
    // Idempotent (a delayed message's timer is deduplicated by its sequence): it runs again
    // when a keyed publish finds the copy an earlier attempt stored.
    const bytes = message.payload.byteLength;
    const stored = async (seq: number) => {
      this.#notePublish(names.stream);
      this.#d.quotas.stored(names.namespaceKey, names.stream, bytes);
      this.#d.tenants.stored(names.namespaceKey, bytes);
      if (delayed) await this.#d.scheduler.schedule(names, seq);
    };
    // One bound for the whole publish, however many round trips it takes: a store that cannot
    // write (a full disk) does not answer at all, and each step would otherwise wait its own
    // timeout. Twice the request timeout leaves a keyed publish room to settle a lost answer
    // (one timeout, then a read); a store that does not answer fails the first write after one
    // timeout. The work goes on after the deadline; a keyed retry by the client finds its copy.
    const ms = 2 * this.#d.requestTimeoutMs;
    return this.#op("publish", () =>
      withDeadline(
        this.#publish(names, message, send, stored),
        ms,
        () => new RequestTimeoutError(`a publish to ${names.stream}`, ms),
      ).catch((err: unknown) => {
        if (isStreamFull(err)) {
          throw topicFull(err);
        }
        if (!isAppError(err)) this.#d.observeWriteFailure(writeFailureCause(err));
        throw err;
      }),
    );
  }

  uploadQuota(topic: TopicAddress, declaredLength: number | null): Promise<UploadQuota> {
    const names = topicNames(this.#d.region, topic);
    return this.#d.quotas.upload(
      names.namespaceKey,
      names.namespaceFilter,
      names.stream,
      declaredLength,
    );
  }

  async #publish(
    names: TopicNames,
    message: NewMessage,
    send: (msgID?: string) => Promise<PubAck>,
    stored: (seq: number) => Promise<void>,
  ): Promise<PublishOutcome> {
    if (!this.#d.isConnected()) {
      throw new AppError("storage_unavailable", { message: "Not connected to NATS." });
    }
    const admitting = this.#d.quotas.admit(
      names.namespaceKey,
      names.namespaceFilter,
      names.stream,
      message.payload.byteLength,
    );
    if (admitting) await admitting;
    const tenantAdmitting = this.#d.tenants.admitBytes(
      names.namespaceKey,
      message.payload.byteLength,
    );
    if (tenantAdmitting) await tenantAdmitting;
    await this.#d.topology.ensureStream(names);
    const attempt = async (): Promise<PublishOutcome> => {
      if (message.idempotencyKey !== null) {
        const token = keyToken(message.idempotencyKey);
        const lifetimeMs = message.retentionSeconds * 1000;
        return this.#d.keys.publish(names, token, lifetimeMs, send, stored);
      }
      const ack = await send().catch((err: unknown) => {
        throw isNoResponders(err) ? new StreamGoneError(names.stream, err) : err;
      });
      await stored(ack.seq);
      return { kind: "stored", seq: ack.seq };
    };
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (err) {
        // The stream was removed under us (a topic sweep or an operator), or is being removed,
        // before anything was stored: wait for the removal to end, recreate the stream and try
        // again (topic-closing.ts). Any other failure may have come after the message was
        // stored, so it is not retried here (a keyed retry by the client finds the copy; see
        // idempotency-keys.ts): the client gets a 503.
        if (!(err instanceof StreamGoneError) || tries >= STREAM_GONE_TRIES) throw err;
        await this.#d.topology.reopenStream(names);
      }
    }
  }

  pull(group: GroupAddress, max: number, start?: GroupStart): Promise<Delivery[] | null> {
    const names = groupNames(this.#d.region, group);
    return this.#op("pull", async () => {
      for (let attempt = 0; attempt < 2; attempt++) {
        if (!(await this.#d.topology.ensureConsumer(names, undefined, start))) return null;
        const r = await this.#d.pulls.pull(names.stream, names.consumer, max, {
          noWait: true,
          expiresMs: PULL_EXPIRES_MS,
        });
        if (r.end === "no_consumer" && r.messages.length === 0) {
          this.#d.topology.forgetConsumer(names);
          continue;
        }
        if (r.end === "timeout" && r.messages.length === 0) {
          // A consumer removed by JetStream (inactive_threshold) or with its stream (idle topic
          // clean-up) leaves pulls unanswered rather than refused: look before answering 503.
          if (attempt === 0 && (await this.#progress(names)) === null) {
            this.#d.topology.forgetConsumer(names);
            continue;
          }
          throw new AppError("storage_unavailable", {
            message: "JetStream did not answer a pull.",
          });
        }
        if (r.messages.length === 0 && this.#publishedRecently(names.stream) && attempt === 0) {
          continue;
        }
        return this.#toDeliveries(r.messages);
      }
      return [];
    });
  }

  setLease(group: GroupAddress, lease: LeaseRef, ms: number): Promise<void> {
    // The server reads the delay as whole nanoseconds; anything else would be a plain -NAK.
    const body = ms > 0 ? `-NAK ${JSON.stringify({ delay: Math.round(ms) * 1_000_000 })}` : "-NAK";
    return this.#ackRequest(group, lease, "nak", body);
  }

  async ack(group: GroupAddress, lease: LeaseRef): Promise<void> {
    await this.#ackRequest(group, lease, "ack", ACK_BODY);
    this.#d.acked?.(group, lease.streamSeq);
  }

  ackUnconfirmed(group: GroupAddress, lease: LeaseRef): void {
    const names = groupNames(this.#d.region, group);
    // No reply subject: the server sends no answer, and the gateway waits for none.
    this.#d.nc.publish(ackSubject(names.stream, names.consumer, lease), ACK_BODY);
  }

  progress(group: GroupAddress): Promise<GroupProgress | null> {
    const names = groupNames(this.#d.region, group);
    return this.#op("consumer_info", () => this.#progress(names));
  }

  async #progress(names: GroupNames): Promise<GroupProgress | null> {
    try {
      const info = await this.#d.jsm.consumers.info(names.stream, names.consumer);
      return {
        ackFloorSeq: info.ack_floor.stream_seq,
        deliveredSeq: info.delivered.stream_seq,
        inFlight: info.num_ack_pending,
      };
    } catch (err) {
      if (
        isApiError(err, JetStreamApiCodes.ConsumerNotFound) ||
        isApiError(err, JetStreamApiCodes.StreamNotFound)
      ) {
        return null;
      }
      throw err;
    }
  }

  /**
   * Stored messages never change, so a replica that has one answers right: each read is Direct
   * Get, and only a "no message" (which a lagging replica may say of a message just stored or
   * just moved) is confirmed by the stream leader.
   */
  lookup(topic: TopicAddress, idSeq: number): Promise<MessageLookup> {
    const names = topicNames(this.#d.region, topic);
    return this.#op("lookup", async () => {
      if (!(await this.#d.topology.streamExists(names))) return { kind: "missing" };
      const stored = await currentGet(this.#d.jsm, names.stream, { seq: idSeq });
      if (!stored) return { kind: "missing" };
      const message = decodeMessage(
        stored.seq,
        rfc3339ToMs(stored.timestamp),
        stored.header,
        stored.data,
      );
      if (!message) return { kind: "missing" };
      if (stored.subject === names.ready) return { kind: "ready", message, streamSeq: stored.seq };
      if (stored.subject !== names.delayed) return { kind: "missing" };
      const subject = `${names.forwardPrefix}.${idSeq.toString(36)}`;
      const pointer =
        (await directGet(this.#d.jsm, names.stream, { last_by_subj: subject })) ??
        (await leaderGet(this.#d.jsm, names.stream, { last_by_subj: subject }));
      if (!pointer) return { kind: "delayed", message };
      const readySeq = Number(new TextDecoder().decode(pointer.data));
      const ready = await currentGet(this.#d.jsm, names.stream, { seq: readySeq });
      if (!ready) return { kind: "missing" };
      const moved = decodeMessage(
        ready.seq,
        rfc3339ToMs(ready.timestamp),
        ready.header,
        ready.data,
      );
      return moved ? { kind: "ready", message: moved, streamSeq: ready.seq } : { kind: "missing" };
    });
  }

  groupEpoch(group: GroupAddress): number {
    return this.#d.epochs.epoch(this.#g(group));
  }

  readTopic(
    topic: TopicAddress,
    fromSeq: number,
    max: number,
    maxBytes = Infinity,
  ): Promise<{ readonly streamSeq: number; readonly message: StoredMessage }[]> {
    const names = topicNames(this.#d.region, topic);
    return this.#op("read_topic", async () => {
      if (!(await this.#d.topology.streamExists(names))) return [];
      const out: { streamSeq: number; message: StoredMessage }[] = [];
      let bytes = 0;
      for (let seq = Math.max(1, fromSeq); out.length < max && bytes < maxBytes;) {
        const m = await leaderGet(this.#d.jsm, names.stream, { seq, next_by_subj: names.ready });
        if (!m) break;
        const message = decodeMessage(m.seq, rfc3339ToMs(m.timestamp), m.header, m.data);
        if (message) {
          out.push({ streamSeq: m.seq, message });
          bytes += message.payload.byteLength;
        }
        seq = m.seq + 1;
      }
      return out;
    });
  }

  removeMessage(topic: TopicAddress, streamSeq: number): Promise<void> {
    const names = topicNames(this.#d.region, topic);
    return this.#op("remove_message", async () => {
      try {
        await this.#d.jsm.streams.deleteMessage(names.stream, streamSeq, false);
      } catch (err) {
        if (!isMessageGone(err)) throw err;
      }
    });
  }

  countMessages(topic: TopicAddress): Promise<number | null> {
    const names = topicNames(this.#d.region, topic);
    return this.#op("count_messages", async () => {
      try {
        const info = await this.#d.jsm.streams.info(names.stream, {
          subjects_filter: names.ready,
        });
        return info.state.subjects?.[names.ready] ?? 0;
      } catch (err) {
        if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return null;
        throw err;
      }
    });
  }

  openFeed(group: GroupAddress, taker: DeliveryTaker): Promise<Feed | null> {
    const names = groupNames(this.#d.region, group);
    return this.#op("open_feed", async () => {
      if (!(await this.#d.topology.ensureConsumer(names))) return null;
      return this.#d.feed.open(names.stream, names.consumer, {
        demand: () => taker.demand(),
        take: (msg) => {
          const d = toDelivery(msg);
          if (d) taker.take(d);
          else msg.respond("+TERM"); // not a queue message: take it out of the way
        },
        gone: () => {
          this.#d.topology.forgetConsumer(names);
          taker.gone();
        },
      });
    });
  }

  async isReady(): Promise<boolean> {
    try {
      await this.#d.jsm.getAccountInfo();
      return true;
    } catch {
      return false;
    }
  }

  /** Runs one store operation: timed for vqs_jetstream_request_duration_seconds, and its
   * failures translated into the error catalogue. */
  async #op<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } catch (err) {
      throw toStorageError(err);
    } finally {
      this.#d.observe(operation, (performance.now() - started) / 1000);
    }
  }

  #notePublish(stream: string): void {
    const now = Date.now();
    if (this.#lastPublish.size > 10_000) {
      for (const [k, t] of this.#lastPublish)
        if (now - t > READ_YOUR_WRITE_MS) this.#lastPublish.delete(k);
    }
    this.#lastPublish.set(stream, now);
  }

  #publishedRecently(stream: string): boolean {
    const t = this.#lastPublish.get(stream);
    return t !== undefined && Date.now() - t < READ_YOUR_WRITE_MS;
  }

  #g(group: GroupAddress): GroupNames {
    return groupNames(this.#d.region, group);
  }

  #toDeliveries(messages: Msg[]): Delivery[] {
    const out: Delivery[] = [];
    for (const msg of messages) {
      const d = toDelivery(msg);
      if (d) out.push(d);
      // Not a queue message (someone published raw to the subject): take it out of the way.
      else if (msg.reply) this.#d.nc.publish(msg.reply, "+TERM");
    }
    return out;
  }

  #ackRequest(
    group: GroupAddress,
    lease: LeaseRef,
    operation: "ack" | "nak",
    body: Uint8Array | string,
  ): Promise<void> {
    const names = groupNames(this.#d.region, group);
    return this.#op(operation, async () => {
      try {
        await this.#d.requests.request(
          ackSubject(names.stream, names.consumer, lease),
          body,
          this.#d.requestTimeoutMs,
        );
      } catch (err) {
        // Nobody serves the ack subject: either the store is away (503) or the group was removed
        // (idle clean-up), and with it every lease it held: then the handle is stale (409).
        if (!isNoResponders(err) || (await this.progress(group)) !== null) throw err;
        this.#d.topology.forgetConsumer(names);
        throw new AppError("receipt_handle_stale", { cause: err });
      }
    });
  }
}

// The baseline: raw JetStream through the NATS client, with what the gateway does per message but
// nothing else. Publish = js.publish with three headers (like the gateway's nonce, content type
// and retention) and the expected-stream check; receive = a no_wait pull of up to 10 on its own
// inbox (as src/nats/pull-client.ts does) and one request-style +ACK per message.
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import {
  createInbox,
  headers,
  nanos,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { sleep, type Recorder } from "./stats.js";
import type { Window } from "./runner.js";

/** Bound on every NATS request of the baseline (the gateway's default is 5 s). */
export const RAW_TIMEOUT_MS = 5000;

/** Headers like the gateway's (src/nats/message-codec.ts): a fresh nonce per message. */
export function gatewayLikeHeaders(): MsgHdrs {
  const h = headers();
  h.set("Vqs-Nonce", randomBytes(12).toString("base64url"));
  h.set("Vqs-Content-Type", "application/octet-stream");
  h.set("Vqs-Retention", "86400");
  return h;
}

/**
 * Headers copied from a message the gateway stored, with a fresh nonce: backlog written straight
 * into a topic's stream is then indistinguishable from published messages.
 */
export function headersLike(template: MsgHdrs | undefined): () => MsgHdrs {
  if (!template) return gatewayLikeHeaders;
  const entries: [string, string][] = [];
  for (const k of template.keys()) entries.push([k, template.get(k)]);
  return () => {
    const h = headers();
    for (const [k, v] of entries) {
      h.set(
        k,
        /nonce/i.test(k)
          ? randomBytes(Math.max(1, Math.floor((v.length * 3) / 4))).toString("base64url")
          : v,
      );
    }
    return h;
  };
}

export interface RawStream {
  readonly stream: string;
  readonly subject: string;
}

/** A stream with the same configuration as `like` (a gateway topic's), under other names. */
export async function createRawStream(
  jsm: JetStreamManager,
  like: StreamConfig,
  name: string,
): Promise<RawStream> {
  const subjectBase = `bench.${name.toLowerCase()}`;
  await jsm.streams.add({
    ...like,
    name,
    description: `vqs bench baseline ${name}`,
    subjects: [`${subjectBase}.>`],
  });
  return { stream: name, subject: `${subjectBase}.m` };
}

/** A durable pull consumer configured like a gateway consumer group (src/nats/topology.ts). */
export async function createRawConsumer(
  jsm: JetStreamManager,
  s: RawStream,
  name: string,
): Promise<void> {
  await jsm.consumers.add(s.stream, {
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: s.subject,
    ack_wait: nanos(60_000),
    max_deliver: -1,
    max_ack_pending: -1,
    inactive_threshold: nanos(3600_000),
  });
}

export function rawPublishOp(
  js: JetStreamClient,
  s: RawStream,
  payload: Uint8Array,
  rec: Recorder,
  makeHeaders: () => MsgHdrs = gatewayLikeHeaders,
) {
  return async (_w: number, window: Window) => {
    const t = performance.now();
    try {
      await js.publish(s.subject, payload, {
        headers: makeHeaders(),
        expect: { streamName: s.stream },
        timeout: RAW_TIMEOUT_MS,
      });
      const done = performance.now();
      if (window.counts(done)) rec.record(done - t);
    } catch (err) {
      rec.error(errorKind(err));
      await sleep(10);
    }
  };
}

/**
 * One no_wait pull of up to `batch` messages, on its own inbox (like the gateway's). Rejects when
 * the server does not answer within RAW_TIMEOUT_MS and nothing arrived (the gateway's 503).
 */
export function pullNoWait(
  nc: NatsConnection,
  stream: string,
  consumer: string,
  batch: number,
): Promise<Msg[]> {
  return new Promise((resolve, reject) => {
    const msgs: Msg[] = [];
    let done = false;
    const inbox = createInbox();
    const finish = (timedOut = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sub.unsubscribe();
      if (timedOut && msgs.length === 0) reject(new Error("pull: no answer"));
      else resolve(msgs);
    };
    const sub = nc.subscribe(inbox, {
      callback: (_err, m) => {
        if (m.reply?.startsWith("$JS.ACK.")) {
          if (done) {
            m.respond("-NAK");
            return;
          }
          msgs.push(m);
          if (msgs.length >= batch) finish();
          return;
        }
        if ((m.headers?.code ?? 0) === 100) return; // idle heartbeat
        finish(); // 404 no messages, 408, 409: the pull is over
      },
    });
    const timer = setTimeout(() => finish(true), RAW_TIMEOUT_MS);
    nc.publish(
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
      JSON.stringify({ batch, no_wait: true }),
      { reply: inbox },
    );
  });
}

export interface ReceiveRecorders {
  /** The pull (receive) calls: latency, messages per call. */
  readonly receive: Recorder;
  /** Each acknowledgement; its message count is the scenario's throughput. */
  readonly ack: Recorder;
}

/**
 * Pull 10, then acknowledge each (one after the other, so a worker has one request in flight).
 * `onEmpty`: "stop" ends the run (a backlog ran out), a number waits that many ms and polls again.
 */
export function rawReceiveOp(
  nc: NatsConnection,
  stream: string,
  consumer: string,
  r: ReceiveRecorders,
  onEmpty: "stop" | number,
) {
  return async (_w: number, window: Window) => {
    const t = performance.now();
    let msgs: Msg[];
    try {
      msgs = await pullNoWait(nc, stream, consumer, 10);
    } catch (err) {
      r.receive.error(errorKind(err));
      await sleep(10);
      return;
    }
    const got = performance.now();
    if (msgs.length === 0) {
      if (onEmpty === "stop") window.stop("backlog ran out");
      else await sleep(onEmpty);
      return;
    }
    if (window.counts(got)) r.receive.record(got - t, msgs.length);
    for (const m of msgs) {
      const a = performance.now();
      try {
        await nc.request(m.reply!, "+ACK", { timeout: RAW_TIMEOUT_MS });
        const done = performance.now();
        if (window.counts(done)) r.ack.record(done - a);
      } catch (err) {
        r.ack.error(errorKind(err));
      }
    }
  };
}

export function errorKind(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 120);
  return String(err).slice(0, 120);
}

/**
 * Writes `count` messages into a stream with `concurrency` publishes in flight, within
 * `maxSeconds`; answers how many were stored.
 */
export async function fillStream(
  js: JetStreamClient,
  s: RawStream,
  payload: Uint8Array,
  count: number,
  maxSeconds: number,
  makeHeaders: () => MsgHdrs,
  concurrency = 256,
): Promise<{ stored: number; seconds: number; errors: number }> {
  const started = performance.now();
  const deadline = started + maxSeconds * 1000;
  let next = 0;
  let stored = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() < deadline && errors < 1000) {
        next++;
        try {
          await js.publish(s.subject, payload, {
            headers: makeHeaders(),
            expect: { streamName: s.stream },
            timeout: RAW_TIMEOUT_MS * 2,
          });
          stored++;
        } catch {
          errors++;
          next--;
        }
      }
    }),
  );
  return { stored, seconds: (performance.now() - started) / 1000, errors };
}

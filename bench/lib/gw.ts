// The same workloads over the gateway's HTTP API (the Vercel Queue v3 calls the official client
// makes): publish = POST /api/v3/topic/{topic}; receive = POST .../consumer/{group} with
// Vqs-Max-Messages: 10 and Accept: multipart/mixed, then DELETE .../lease/{handle} for each message.
import { parseMultipart, type HttpClient } from "./http-client.js";
import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import { errorKind, headersLike, type RawStream, type ReceiveRecorders } from "./raw.js";
import { sleep, type Recorder } from "./stats.js";
import type { Window } from "./runner.js";

export class GatewayApi {
  readonly #client: HttpClient;
  readonly #auth: string;

  constructor(client: HttpClient, token: string) {
    this.#client = client;
    this.#auth = `Bearer ${token}`;
  }

  /** `headers`: more request headers, e.g. the message's own. */
  publish(topic: string, payload: Buffer, headers: Record<string, string> = {}) {
    return this.#client.request(
      "POST",
      `/api/v3/topic/${topic}`,
      {
        ...headers,
        authorization: this.#auth,
        "content-type": "application/octet-stream",
      },
      payload,
    );
  }

  receive(topic: string, group: string, max = 10) {
    return this.#client.request("POST", `/api/v3/topic/${topic}/consumer/${group}`, {
      authorization: this.#auth,
      accept: "multipart/mixed",
      "vqs-max-messages": String(max),
    });
  }

  ack(topic: string, group: string, handle: string) {
    return this.#client.request(
      "DELETE",
      `/api/v3/topic/${topic}/consumer/${group}/lease/${encodeURIComponent(handle)}`,
      { authorization: this.#auth },
    );
  }

  /** PUT a consumer group's settings document (JSON), e.g. `{push: {...}}`; `{}`: polled. */
  putSettings(topic: string, group: string, settings: unknown) {
    return this.#client.request(
      "PUT",
      `/api/v3/topic/${topic}/consumer/${group}/settings`,
      { authorization: this.#auth, "content-type": "application/json" },
      Buffer.from(JSON.stringify(settings)),
    );
  }

  get(path: string) {
    return this.#client.request("GET", path, {});
  }
}

export function gwPublishOp(api: GatewayApi, topic: string, payload: Buffer, rec: Recorder) {
  return async (_w: number, window: Window) => {
    const t = performance.now();
    try {
      const res = await api.publish(topic, payload);
      const done = performance.now();
      // Errors count wherever they happen (warm-up included); successes only inside the window.
      if (res.status !== 201) rec.error(`HTTP ${res.status}`);
      else if (window.counts(done)) rec.record(done - t);
    } catch (err) {
      rec.error(errorKind(err));
      await sleep(10);
    }
  };
}

/** Receive 10, then acknowledge each (one after the other), like rawReceiveOp. */
export function gwReceiveOp(
  api: GatewayApi,
  topic: string,
  group: string,
  r: ReceiveRecorders,
  onEmpty: "stop" | number,
) {
  return async (_w: number, window: Window) => {
    const t = performance.now();
    let handles: string[];
    try {
      const res = await api.receive(topic, group);
      const got = performance.now();
      if (res.status === 204) {
        if (onEmpty === "stop") window.stop("backlog ran out");
        else await sleep(onEmpty);
        return;
      }
      if (res.status !== 200) {
        r.receive.error(`receive HTTP ${res.status}`);
        await sleep(10);
        return;
      }
      const parts = parseMultipart(res.contentType, res.body);
      handles = parts.map((p) => p.headers.get("vqs-receipt-handle") ?? "");
      if (window.counts(got)) r.receive.record(got - t, parts.length);
    } catch (err) {
      r.receive.error(errorKind(err));
      await sleep(10);
      return;
    }
    for (const handle of handles) {
      const a = performance.now();
      try {
        const res = await api.ack(topic, group, handle);
        const done = performance.now();
        if (res.status !== 204) r.ack.error(`ack HTTP ${res.status}`);
        else if (window.counts(done)) r.ack.record(done - a);
      } catch (err) {
        r.ack.error(errorKind(err));
      }
    }
  };
}

/** A gateway topic's stream, found by its description after one publish through the gateway. */
export interface TopicStream extends RawStream {
  readonly topic: string;
  readonly config: StreamConfig;
  /** Headers of a message the gateway stored, with a fresh nonce each call. */
  readonly makeHeaders: () => MsgHdrs;
}

export async function topicStream(
  ctx: { readonly api: GatewayApi; readonly jsm: JetStreamManager },
  topic: string,
  payload: Buffer,
): Promise<TopicStream> {
  const res = await ctx.api.publish(topic, payload);
  if (res.status !== 201) {
    throw new Error(`probe publish to ${topic}: HTTP ${res.status} ${res.body.toString()}`);
  }
  let pages = 0;
  for await (const info of ctx.jsm.streams.list()) {
    if (++pages > 100_000) break;
    let described: { topic?: string } = {};
    try {
      described = JSON.parse(info.config.description ?? "{}") as { topic?: string };
    } catch {
      continue;
    }
    if (described.topic !== topic) continue;
    const last = await ctx.jsm.streams.getMessage(info.config.name, { seq: info.state.last_seq });
    if (!last) throw new Error(`stream ${info.config.name}: the probe message is missing`);
    // Stored as the gateway stores them (headers copied, fresh nonce): queue messages to it.
    return {
      topic,
      stream: info.config.name,
      subject: last.subject,
      config: info.config,
      makeHeaders: headersLike(last.header),
    };
  }
  throw new Error(`no stream describes topic ${topic} (has the naming scheme changed?)`);
}

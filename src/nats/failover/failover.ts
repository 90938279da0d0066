// Regional failover. While this region's JetStream cannot store a publish, the message is stored
// in a neighbour region's stream VQS_DEFERRED_<home> (a work queue no consumer group reads, so it
// is never consumable there) and the client gets 202. The home region's gateways relocate those
// messages: each pulls from one shared durable consumer on every neighbour's deferred stream,
// publishes the message into its home topic (Nats-Msg-Id makes the copy happen once, whichever
// gateway does it and however often it is retried), then acknowledges it in the neighbour.
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import {
  headers,
  nanos,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";
import type { FailoverRegion } from "../../config.js";
import { AppError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Deferrer, NewMessage } from "../../queue/broker.js";
import { makeNamespace, type TopicAddress } from "../../queue/namespace.js";
import { parseAckSubject } from "../messages/ack-subject.js";
import { connectNats } from "../core/connection.js";
import type { DelayScheduler } from "../scheduling/delay-scheduler.js";
import {
  encodeHeaders,
  H,
  KEPT_HEADERS,
  keyToken,
  nanosTokenToMs,
} from "../messages/message-codec.js";
import type { IdempotencyKeys } from "../queue-state/keys/idempotency-keys.js";
import { remainingTtl } from "../core/server-features.js";
import { topicNames } from "../core/naming.js";
import { Once } from "../core/once.js";
import { PullClient } from "../pulls/pull-client.js";
import type { Topology } from "../queue-state/topics/topology.js";

const NS = "Vqs-Namespace";
const TOPIC = "Vqs-Topic";
const DEDUP = "Vqs-Dedup";
const RELOCATOR = "relocator";
/** The only shape a key token has (it becomes a subject token at home). */
const KEY_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** What relocation needs of the home region's store. */
export interface HomeStore {
  readonly js: JetStreamClient;
  readonly topology: Topology;
  readonly scheduler: DelayScheduler;
  readonly keys: IdempotencyKeys;
  /** Send Nats-TTL with relocated messages (home streams allow per-message TTL). */
  readonly messageTtl: boolean;
  /** False while the home NATS is unreachable: relocation then waits. */
  readonly isConnected: () => boolean;
}

interface Neighbour {
  readonly region: string;
  /** Resolves once connected (connecting never gives up); null until then. */
  nc: NatsConnection | null;
  js: JetStreamClient | null;
  jsm: JetStreamManager | null;
  readonly ensured: Once<void>;
}

export interface FailoverOptions {
  readonly home: string;
  readonly neighbours: readonly FailoverRegion[];
  readonly replicas: number;
  readonly requestTimeoutMs: number;
  readonly maxAgeMs: number;
  readonly log: Logger;
  readonly now: () => number;
  readonly credentials: {
    credsFile: string | null;
    user: string | null;
    password: string | null;
    token: string | null;
  };
}

export class Failover implements Deferrer {
  readonly #o: FailoverOptions;
  readonly #neighbours: Neighbour[];
  readonly #stream: string;
  readonly #subject: string;
  #running = false;
  readonly #loops: Promise<void>[] = [];
  readonly #pulls: PullClient[] = [];

  constructor(o: FailoverOptions) {
    this.#o = o;
    this.#stream = `VQS_DEFERRED_${o.home}`;
    this.#subject = `vqs.deferred.${o.home}`;
    this.#neighbours = o.neighbours.map((n) => {
      const neighbour: Neighbour = {
        region: n.region,
        nc: null,
        js: null,
        jsm: null,
        ensured: new Once<void>(),
      };
      void connectNats(
        { servers: n.servers, name: `vqs-failover-${o.home}-to-${n.region}`, ...o.credentials },
        o.log,
      )
        .then(async (nc) => {
          neighbour.nc = nc;
          neighbour.js = jetstream(nc, { timeout: o.requestTimeoutMs });
          neighbour.jsm = await jetstreamManager(nc, {
            timeout: o.requestTimeoutMs,
            checkAPI: false,
          });
        })
        .catch((err: unknown) =>
          o.log.error({ err, region: n.region }, "failover region unreachable"),
        );
      return neighbour;
    });
  }

  /** Stores the message in the first neighbour that takes it. */
  async defer(topic: TopicAddress, message: NewMessage): Promise<void> {
    const h = encodeHeaders(message);
    h.set(NS, Buffer.from(topic.namespace.key).toString("base64url"));
    h.set(TOPIC, topic.topic);
    const key = message.idempotencyKey !== null ? keyToken(message.idempotencyKey) : null;
    if (key !== null) h.set(DEDUP, key);
    const stream = topicNames(this.#o.home, topic).stream;
    for (const n of this.#neighbours) {
      if (!n.js || n.nc?.isClosed()) continue;
      try {
        await this.#ensure(n);
        await n.js.publish(this.#subject, message.payload, {
          headers: h,
          timeout: this.#o.requestTimeoutMs,
          ...(key !== null ? { msgID: `${stream}.k.${key}` } : {}),
        });
        return;
      } catch (err) {
        this.#o.log.warn(
          { err, region: n.region },
          "failover region could not store a deferred message",
        );
      }
    }
    throw new AppError("storage_unavailable", {
      message: "Neither this region nor a failover region can store the message right now.",
    });
  }

  /** Starts relocating deferred messages home (every home gateway runs this). */
  startRelocating(home: HomeStore): void {
    if (this.#running) return;
    this.#running = true;
    for (const n of this.#neighbours) this.#loops.push(this.#relocate(n, home));
  }

  /** True while some neighbour is connected: publishes can be deferred (readiness). */
  canDefer(): boolean {
    return this.#neighbours.some((n) => n.js !== null && n.nc !== null && !n.nc.isClosed());
  }

  /** Deferred messages waiting in the neighbours (for vqs_deferred_messages). */
  async waiting(): Promise<number> {
    let total = 0;
    for (const n of this.#neighbours) {
      if (!n.jsm) continue;
      const info = await n.jsm.consumers.info(this.#stream, RELOCATOR).catch(() => null);
      if (info) total += info.num_pending + info.num_ack_pending;
    }
    return total;
  }

  async close(): Promise<void> {
    this.#running = false;
    for (const p of this.#pulls) p.close();
    await Promise.all(this.#loops);
    await Promise.all(
      this.#neighbours.map(async (n) => {
        if (n.nc) await n.nc.drain().catch(() => n.nc?.close());
      }),
    );
  }

  #ensure(n: Neighbour): Promise<void> {
    return n.ensured.get(async () => {
      const jsm = n.jsm!;
      await jsm.streams.info(this.#stream).catch(() =>
        jsm.streams.add({
          name: this.#stream,
          description: `vqs: messages for region ${this.#o.home}, deferred during its outage`,
          subjects: [this.#subject],
          retention: RetentionPolicy.Workqueue,
          storage: StorageType.File,
          max_age: nanos(this.#o.maxAgeMs),
          num_replicas: this.#o.replicas,
        }),
      );
      await jsm.consumers.info(this.#stream, RELOCATOR).catch(() =>
        jsm.consumers.add(this.#stream, {
          durable_name: RELOCATOR,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: nanos(30_000),
          max_deliver: -1,
        }),
      );
    });
  }

  async #relocate(n: Neighbour, home: HomeStore): Promise<void> {
    let pulls: PullClient | null = null;
    while (this.#running) {
      try {
        if (!n.nc || !n.jsm || !home.isConnected()) {
          await sleep(500);
          continue;
        }
        if (!pulls) this.#pulls.push((pulls = new PullClient(n.nc)));
        await this.#ensure(n);
        const handling: Promise<void>[] = [];
        const r = await pulls.pull(this.#stream, RELOCATOR, 64, {
          noWait: false,
          expiresMs: 2000,
          onMessage: (m) => handling.push(this.#moveHome(n.region, m, home)),
        });
        await Promise.all(handling);
        if (r.end === "no_consumer") n.ensured.reset();
        if (r.end !== "done") await sleep(500);
      } catch (err) {
        this.#o.log.warn({ err, region: n.region }, "relocation: retrying after an error");
        n.ensured.reset();
        await sleep(1000);
      }
    }
  }

  async #moveHome(from: string, msg: Msg, home: HomeStore): Promise<void> {
    try {
      const info = msg.reply ? parseAckSubject(msg.reply) : null;
      const hdrs = msg.headers;
      const nsKey = hdrs?.get(NS);
      const topic = hdrs?.get(TOPIC);
      const retention = Number(hdrs?.get(H.retention));
      if (!info || !hdrs || !nsKey || !topic || !Number.isSafeInteger(retention)) {
        msg.respond("+TERM"); // not a deferred message of ours
        return;
      }
      const sentMs = nanosTokenToMs(info.timestampToken);
      const delay = Number(hdrs.get(H.delay) || "0");
      if (sentMs + retention * 1000 <= this.#o.now()) {
        msg.respond("+ACK"); // expired while waiting: never delivered
        return;
      }
      const parts = JSON.parse(Buffer.from(nsKey, "base64url").toString()) as [
        string,
        string,
        string,
        string | null,
      ];
      const names = topicNames(this.#o.home, { namespace: makeNamespace(...parts), topic });
      const parked = sentMs + delay * 1000 > this.#o.now();
      await home.topology.ensureStream(names);
      const send = (msgID?: string) =>
        home.js.publish(parked ? names.delayed : names.ready, msg.data, {
          headers: relocatedHeaders(hdrs, sentMs),
          msgID: msgID ?? `df.${from}.${info.streamSeq}`,
          timeout: this.#o.requestTimeoutMs,
          ...(home.messageTtl
            ? { ttl: remainingTtl(sentMs + retention * 1000, this.#o.now()) }
            : {}),
        });
      // Idempotent: it runs again when a retried move finds the copy an earlier one stored.
      const stored = async (seq: number) => {
        if (parked) await home.scheduler.schedule(names, seq);
      };
      // A keyed message takes its key at home like any publish (a duplicate of a live message
      // with the key is dropped); others are deduplicated by their place in the deferred stream.
      const token = hdrs.get(DEDUP);
      if (token && KEY_TOKEN.test(token)) {
        const lifetimeMs = sentMs + retention * 1000 - this.#o.now();
        await home.keys.publish(names, token, lifetimeMs, send, stored);
      } else {
        const ack = await send();
        // Also for a copy an earlier attempt stored (deduplicated): its timer may have failed.
        await stored(ack.seq);
      }
      msg.respond("+ACK"); // if this ack is lost, the redelivered copy is deduplicated at home
    } catch (err) {
      // Home cannot take it yet: try again in a second (any home gateway may).
      msg.respond(`-NAK ${JSON.stringify({ delay: 1_000_000_000 })}`);
      this.#o.log.warn(
        { err, region: from },
        "relocation of a deferred message failed; will retry",
      );
    }
  }
}

/** The message's own headers, with its original server time so TTL and delay keep counting. */
function relocatedHeaders(deferred: MsgHdrs, sentMs: number): MsgHdrs {
  const h = headers();
  for (const key of [...KEPT_HEADERS, H.delay]) {
    const v = deferred.get(key);
    if (v) h.set(key, v);
  }
  h.set(H.sentMs, String(sentMs));
  return h;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

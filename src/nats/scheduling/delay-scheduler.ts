// Delayed messages. A delayed publish parks the message on its topic's "delayed" subject, which
// no consumer group reads, and adds a timer to the region's timer stream, on its namespace's
// shard. Every gateway pulls every shard's durable consumer, each in its own loop, so a namespace
// that floods its shard with timers delays only the namespaces that share that shard (1 in 16),
// not the rest. A timer that is not due is `-NAK`ed with exactly the time left, so JetStream
// itself holds it until then (no gateway keeps timers in memory, and any gateway can die). When due, the message is copied to the ready subject (idempotently, with
// Nats-Msg-Id) and a forward pointer records where the copy is, for receive by ID. The same
// timers delete an idempotency key's records once its message has expired (idempotency-keys.ts).
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { JetStreamApiCodes } from "@nats-io/jetstream";
import { nanos, type Msg } from "@nats-io/transport-node";
import type { Logger } from "../../logger.js";
import { decodeMessage, movedHeaders, rfc3339ToMs } from "../messages/message-codec.js";
import {
  SCHEDULE_CONSUMER,
  SCHEDULE_STREAM,
  TIMER_SHARDS,
  TIMER_STREAM,
  timerConsumer,
  timerShard,
  timerSubject,
  type TopicNames,
} from "../core/naming.js";
import type { PullClient } from "../pulls/pull-client.js";
import { currentGet, directGet, leaderGet } from "../messages/reads.js";
import {
  FORGET_MARGIN_MS,
  readKeyMessage,
  readKeyRecord,
} from "../queue-state/keys/key-records.js";
import { isNoResponders } from "../core/errors.js";
import { remainingTtl } from "../core/server-features.js";
import { Once } from "../core/once.js";
import { isApiError, isMessageGone } from "../core/errors.js";
import type { Topology } from "../queue-state/topics/topology.js";
import { MoveBudget } from "./move-budget.js";
import { parseAckSubject } from "../messages/ack-subject.js";

/** Moves a parked message to the ready subject when it is due. */
interface MoveTimer {
  /** Topic stream and the sequence of the parked message. */
  readonly s: string;
  readonly q: number;
  /** Subjects of the topic: parked (delayed), ready, and the forward pointer prefix. */
  readonly p: string;
  readonly r: string;
  readonly f: string;
}

/**
 * Deletes an idempotency key's record (stream `s`, sequence `q`) at `x` (server time, ms). Written
 * by gateways before key timers (below); still handled for timers they left in the stream.
 */
interface ForgetTimer {
  readonly s: string;
  readonly q: number;
  readonly x: number;
}

/**
 * From `x` (server time, ms) on, deletes the records of the key on subject `k` of stream `s` once
 * the message they point at has expired (waiting for it while it lives).
 */
interface KeyTimer {
  readonly s: string;
  readonly k: string;
  readonly x: number;
}

type Timer = MoveTimer | ForgetTimer | KeyTimer;

export interface DelaySchedulerDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly topology: Topology;
  readonly pulls: PullClient;
  readonly log: Logger;
  readonly now: () => number;
  readonly requestTimeoutMs: number;
  readonly maxAgeMs: number;
  /** Send Nats-TTL with the copies (the streams allow per-message TTL). */
  readonly messageTtl: boolean;
  /** Timer moves per second per namespace on this gateway (0: none); see move-budget.ts. */
  readonly movesPerSecondPerNamespace: number;
  /**
   * Runs a due timer's move in the gateway's fair share (src/queue/admission/in-flight/fair-share.ts), on
   * a line of its namespace's timers: a namespace whose timers come due by the thousand has a
   * few moves toward NATS at once, and other namespaces' moves and requests go in turn with them.
   */
  readonly share?: <T>(key: string, op: () => Promise<T>) => Promise<T>;
}

const BATCH = 32;
const WAIT_MS = 5000;
const EARLY_TOLERANCE_MS = 5;
/** How often a gateway looks whether the single timer stream of earlier versions exists. */
const LEGACY_LOOK_MS = 60_000;

export class DelayScheduler {
  readonly #d: DelaySchedulerDeps;
  #running = false;
  #loops: Promise<void>[] = [];
  readonly #ensured = new Once<void>();
  /** Whether the timer stream of earlier versions is there to drain (looked at now and then). */
  #legacy: { exists: boolean; at: number } = { exists: false, at: 0 };
  readonly #moves: MoveBudget;

  constructor(deps: DelaySchedulerDeps) {
    this.#d = deps;
    this.#moves = new MoveBudget(deps.movesPerSecondPerNamespace, deps.now);
  }

  /** Creates the timer stream and its shards' consumers once per gateway (again after a failure). */
  #ensure(): Promise<void> {
    return this.#ensured.get(() => this.#create());
  }

  async #create(): Promise<void> {
    await this.#d.topology.ensureInternalStream({
      name: TIMER_STREAM,
      description: "vqs: timers of delayed messages and key records, sharded by namespace",
      subjects: [timerSubject(0).replace(/\.0$/, ".*")],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      max_age: nanos(this.#d.maxAgeMs + 3_600_000),
    });
    await Promise.all(
      Array.from({ length: TIMER_SHARDS }, async (_, shard) => {
        try {
          await this.#d.jsm.consumers.info(TIMER_STREAM, timerConsumer(shard));
        } catch {
          await this.#d.jsm.consumers.add(TIMER_STREAM, {
            durable_name: timerConsumer(shard),
            filter_subject: timerSubject(shard),
            ack_policy: AckPolicy.Explicit,
            deliver_policy: DeliverPolicy.All,
            ack_wait: nanos(30_000),
            max_deliver: -1,
            max_ack_pending: -1,
          });
        }
      }),
    );
  }

  /** Whether the single timer stream of earlier versions (and its consumer) is there to drain. */
  async #legacyExists(): Promise<boolean> {
    if (this.#legacy.exists || Date.now() - this.#legacy.at < LEGACY_LOOK_MS) {
      return this.#legacy.exists;
    }
    let exists = true;
    try {
      await this.#d.jsm.consumers.info(SCHEDULE_STREAM, SCHEDULE_CONSUMER);
    } catch (err) {
      const gone =
        isApiError(err, JetStreamApiCodes.StreamNotFound) ||
        isApiError(err, JetStreamApiCodes.ConsumerNotFound);
      if (!gone) throw err;
      exists = false;
    }
    this.#legacy = { exists, at: Date.now() };
    return exists;
  }

  /**
   * Adds the timer of a parked message. Extra timers for one message are harmless: the move is
   * idempotent. `rearm` (a keyed retry found the message parked) adds at most one more timer per
   * minute, in case the first timer was never stored.
   */
  async schedule(names: TopicNames, seq: number, rearm = false): Promise<void> {
    await this.#ensure();
    const timer: MoveTimer = {
      s: names.stream,
      q: seq,
      p: names.delayed,
      r: names.ready,
      f: names.forwardPrefix,
    };
    await this.#add(
      names.namespaceKey,
      timer,
      rearm
        ? `${names.stream}.${seq}.${Math.floor(Date.now() / 60_000)}`
        : `${names.stream}.${seq}`,
    );
  }

  /**
   * Adds a timer that deletes the records of the key on `subject` once their message has expired,
   * looking first at `atMs`. `id` names the publish it is for (repeats within the schedule's
   * duplicate window add nothing; extra timers for one key are harmless).
   */
  async forgetKey(names: TopicNames, subject: string, atMs: number, id: string): Promise<void> {
    await this.#ensure();
    const timer: KeyTimer = { s: names.stream, k: subject, x: atMs };
    await this.#add(names.namespaceKey, timer, `k.${names.stream}.${id}`);
  }

  async #add(namespaceKey: string, timer: Timer, msgID: string): Promise<void> {
    const subject = timerSubject(timerShard(namespaceKey));
    const send = () =>
      this.#d.js.publish(subject, JSON.stringify(timer), {
        msgID,
        timeout: this.#d.requestTimeoutMs,
      });
    try {
      await send();
    } catch (err) {
      // The timer stream was removed under us: create it again and retry once.
      if (!isNoResponders(err)) throw err;
      this.#ensured.reset();
      this.#d.topology.forgetStream(TIMER_STREAM);
      await this.#ensure();
      await send();
    }
  }

  /** One loop per shard, and one draining the timers of earlier versions while they exist. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loops = Array.from({ length: TIMER_SHARDS }, (_, shard) =>
      this.#run(TIMER_STREAM, timerConsumer(shard), async () => {
        await this.#ensure();
        return true;
      }),
    );
    this.#loops.push(this.#run(SCHEDULE_STREAM, SCHEDULE_CONSUMER, () => this.#legacyExists()));
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }

  async #run(stream: string, consumer: string, ready: () => Promise<boolean>): Promise<void> {
    while (this.#running) {
      try {
        if (!(await ready())) {
          await sleep(1000);
          continue;
        }
        const handling: Promise<boolean>[] = [];
        let firstAt = 0;
        const r = await this.#d.pulls.pull(stream, consumer, BATCH, {
          noWait: false,
          expiresMs: WAIT_MS,
          onMessage: (m) => {
            if (handling.length === 0) firstAt = performance.now();
            handling.push(this.#handle(m));
          },
        });
        // The loop's throughput, which the move budget follows (move-budget.ts).
        const moved = (await Promise.all(handling)).filter(Boolean).length;
        this.#moves.measured(moved, performance.now() - firstAt);
        if (r.end === "no_consumer") {
          if (stream === TIMER_STREAM) this.#ensured.reset();
          else this.#legacy = { exists: false, at: Date.now() };
          await sleep(1000);
        }
      } catch (err) {
        this.#d.log.warn({ err }, "delay scheduler: retrying after an error");
        await sleep(1000);
      }
    }
  }

  /** Handles one timer; true when it moved a message. */
  async #handle(msg: Msg): Promise<boolean> {
    const timer = parseTimer(msg.data);
    if (!timer) {
      // Not a timer of ours (someone published to the schedule subject): never retry it.
      msg.respond("+TERM");
      this.#d.log.warn({ subject: msg.subject }, "delay scheduler: dropped a malformed timer");
      return false;
    }
    try {
      if ("k" in timer) await this.#forgetKey(msg, timer);
      else if ("x" in timer) await this.#forget(msg, timer);
      else return await this.#move(msg, timer);
    } catch (err) {
      // Left unacknowledged: JetStream redelivers the timer after its ack wait (30 s).
      this.#d.log.warn({ err }, "delay scheduler: timer left for redelivery");
    }
    return false;
  }

  async #forget(msg: Msg, timer: ForgetTimer): Promise<void> {
    if (this.#notDue(msg, timer.x)) return;
    try {
      await this.#d.jsm.streams.deleteMessage(timer.s, timer.q, false);
    } catch (err) {
      const gone = isMessageGone(err) || isApiError(err, JetStreamApiCodes.StreamNotFound);
      if (!gone) throw err;
    }
    msg.respond("+ACK");
  }

  async #forgetKey(msg: Msg, timer: KeyTimer): Promise<void> {
    if (this.#notDue(msg, timer.x)) return;
    try {
      const head = await readKeyRecord(this.#d.jsm, timer.s, timer.k);
      if (head) {
        const now = this.#d.now();
        const message = await readKeyMessage(this.#d.jsm, timer.s, head.messageSeq, null, now);
        // The key holds a live message (a later publish took it): look again once it expires.
        if (message.live) {
          this.#nak(msg, message.expiresAtMs + FORGET_MARGIN_MS - now);
          return;
        }
        // Every record of the key up to the current one: a record a publish writes meanwhile has
        // a higher sequence and stays (and a racer that read the deleted one reads again).
        await this.#d.jsm.streams.purge(timer.s, { filter: timer.k, seq: head.recordSeq + 1 });
      }
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    }
    msg.respond("+ACK");
  }

  /** NAKs a timer until `atMs` (true) when it is not due yet. */
  #notDue(msg: Msg, atMs: number): boolean {
    const wait = atMs - this.#d.now();
    if (wait <= EARLY_TOLERANCE_MS) return false;
    this.#nak(msg, wait);
    return true;
  }

  #nak(msg: Msg, delayMs: number): void {
    msg.respond(`-NAK ${JSON.stringify({ delay: Math.max(1, Math.round(delayMs)) * 1_000_000 })}`);
  }

  async #move(msg: Msg, timer: MoveTimer): Promise<boolean> {
    // Before any read: a namespace past its budget costs a -NAK per timer, not a move. Its
    // namespace is the parked subject's second token (`vqs.<namespace>.<topic>.d`).
    const seq = parseAckSubject(msg.reply ?? "")?.streamSeq ?? 0;
    const namespace = timer.p.split(".")[1] ?? "";
    const over = this.#moves.delayMs(namespace, seq);
    if (over > 0) {
      this.#nak(msg, over);
      return false;
    }
    const share = this.#d.share;
    return share
      ? share(`timers ${namespace}`, () => this.#moveDue(msg, timer))
      : this.#moveDue(msg, timer);
  }

  /** Moves a timer's parked message (true) unless it is gone, not due yet, or moved already. */
  async #moveDue(msg: Msg, timer: MoveTimer): Promise<boolean> {
    const parked = await this.#parked(timer);
    const message = parked
      ? decodeMessage(parked.seq, rfc3339ToMs(parked.timestamp), parked.header, parked.data)
      : null;
    if (!parked || !message || message.expiresAtMs <= this.#d.now()) {
      msg.respond("+ACK"); // gone, not a parked message, or expired before it was due
      return false;
    }
    if (this.#notDue(msg, message.visibleAtMs)) return false;
    // Moved already (a repeated timer, or a retry after the pointer was written): the copy's
    // Nats-Msg-Id only deduplicates within the stream's short duplicate window.
    if (await this.#moved(timer)) {
      msg.respond("+ACK");
      return false;
    }
    // With per-message TTL, the copy and its pointer expire with the message.
    const ttl = this.#d.messageTtl ? { ttl: remainingTtl(message.expiresAtMs, this.#d.now()) } : {};
    const ack = await this.#d.js.publish(timer.r, parked.data, {
      headers: movedHeaders(parked.header, timer.q, message.publishedAtMs),
      msgID: `mv.${timer.q}`,
      timeout: this.#d.requestTimeoutMs,
      ...ttl,
    });
    await this.#d.js.publish(`${timer.f}.${timer.q.toString(36)}`, String(ack.seq), {
      msgID: `fw.${timer.q}`,
      timeout: this.#d.requestTimeoutMs,
      ...ttl,
    });
    msg.respond("+ACK");
    return true;
  }

  /** Whether the forward pointer exists; a replica's "no" is confirmed by the leader. */
  async #moved(timer: MoveTimer): Promise<boolean> {
    const subject = `${timer.f}.${timer.q.toString(36)}`;
    return (
      (await directGet(this.#d.jsm, timer.s, { last_by_subj: subject })) !== null ||
      (await leaderGet(this.#d.jsm, timer.s, { last_by_subj: subject })) !== null
    );
  }

  /**
   * The parked message of a timer; null only when it is certainly gone or not parked (a stored
   * message never changes, so a replica that has it is right; its "no message" is confirmed by
   * the leader, or a lagging replica would drop the delayed message).
   */
  async #parked(timer: MoveTimer) {
    try {
      const m = await currentGet(this.#d.jsm, timer.s, { seq: timer.q });
      return m && m.subject === timer.p ? m : null;
    } catch (err) {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return null;
      // Direct Get of a removed stream times out rather than failing: ask the API.
      const exists = await this.#d.jsm.streams.info(timer.s).then(
        () => true,
        (e: unknown) => !isApiError(e, JetStreamApiCodes.StreamNotFound),
      );
      if (!exists) return null;
      throw err;
    }
  }
}

const TOPIC_STREAM = /^VQS_[0-9a-f]{32}$/;
const KEY_SUBJECT = /^vqs\.[0-9a-f]{16}\.[0-9a-f]{32}\.k\.[A-Za-z0-9_-]{43}$/;

function parseTimer(data: Uint8Array): Timer | null {
  let t: Record<string, unknown>;
  try {
    t = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof t !== "object" || t === null || typeof t.s !== "string") return null;
  // A key timer purges a subject: only one of a topic stream's key subjects is accepted.
  if (typeof t.k === "string" && typeof t.x === "number") {
    return TOPIC_STREAM.test(t.s) && KEY_SUBJECT.test(t.k) ? (t as unknown as KeyTimer) : null;
  }
  if (!Number.isSafeInteger(t.q)) return null;
  if (typeof t.x === "number") return t as unknown as ForgetTimer;
  const subjects = [t.p, t.r, t.f];
  return subjects.every((v) => typeof v === "string") ? (t as unknown as MoveTimer) : null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

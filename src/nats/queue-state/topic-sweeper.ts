// Removes empty, idle topics. A topic's stream whose every message has left it (aged out at the
// stream's max age) and that nobody published to for the idle time is deleted with its consumer
// groups; the next publish creates it again. Every gateway sweeps now and then (with jitter);
// sweeps are idempotent, so several gateways doing it at once is harmless.
//
// Deleting a stream cannot be made conditional in JetStream, and a publish landing between the
// check and the delete would be lost after its 201. So the sweeper first moves the stream off its
// subjects (publishes then find no stream and answer 503, retryable), looks again, and deletes
// only if still nothing arrived; otherwise it puts the subjects back.
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { JetStreamApiCodes } from "@nats-io/jetstream";
import type { Logger } from "../../logger.js";
import { rfc3339ToMs } from "../messages/message-codec.js";
import { isApiError } from "../core/errors.js";

export interface TopicSweeperDeps {
  readonly jsm: JetStreamManager;
  readonly log: Logger;
  /** Server time (estimated). */
  readonly now: () => number;
  readonly idleMs: number;
}

const TOPIC_STREAM = /^VQS_[0-9a-f]{32}$/;
/** Sweeps happen every half idle time, at most every 10 minutes, with ±50 % jitter. */
const MAX_INTERVAL_MS = 600_000;

export class TopicSweeper {
  readonly #d: TopicSweeperDeps;
  #timer: NodeJS.Timeout | null = null;
  #sweeping: Promise<number> | null = null;

  constructor(deps: TopicSweeperDeps) {
    this.#d = deps;
  }

  start(): void {
    const base = Math.min(this.#d.idleMs / 2, MAX_INTERVAL_MS);
    const next = () => {
      this.#timer = setTimeout(
        () => {
          this.sweep()
            .catch((err: unknown) => this.#d.log.warn({ err }, "topic sweep failed"))
            .finally(() => {
              if (this.#timer) next();
            });
        },
        base * (0.5 + Math.random()),
      );
      this.#timer.unref();
    };
    next();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#sweeping?.catch(() => undefined);
  }

  /** One pass over the region's topics; the number removed. */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#sweep().finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  async #sweep(): Promise<number> {
    const candidates: StreamInfo[] = [];
    for await (const info of this.#d.jsm.streams.list()) {
      if (this.#isIdleEmptyTopic(info)) candidates.push(info);
    }
    let removed = 0;
    for (const info of candidates) {
      try {
        if (await this.#remove(info)) removed++;
      } catch (err) {
        if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) {
          this.#d.log.warn({ err, stream: info.config.name }, "could not remove an idle topic");
        }
      }
    }
    if (removed > 0) this.#d.log.info({ removed }, "removed empty idle topics");
    return removed;
  }

  #isIdleEmptyTopic(info: StreamInfo): boolean {
    if (!TOPIC_STREAM.test(info.config.name) || info.state.messages !== 0) return false;
    if (!info.config.description?.startsWith('{"vqs":1')) return false;
    const last = info.state.last_seq > 0 ? info.state.last_ts : info.created;
    return this.#d.now() - rfc3339ToMs(last) >= this.#d.idleMs;
  }

  async #remove(seen: StreamInfo): Promise<boolean> {
    const { name, subjects } = seen.config;
    // Off its subjects: from now on no publish can be stored (they answer 503).
    await this.#d.jsm.streams.update(name, { ...seen.config, subjects: [`vqs._closing.${name}`] });
    const now = await this.#d.jsm.streams.info(name);
    if (now.state.messages === 0 && now.state.last_seq === seen.state.last_seq) {
      await this.#d.jsm.streams.delete(name);
      return true;
    }
    // A publish got in before the move: the topic is in use after all.
    await this.#d.jsm.streams.update(name, { ...now.config, subjects: subjects ?? [] });
    return false;
  }
}

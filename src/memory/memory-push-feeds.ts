// The twin of the NATS adapter's push feeds (src/nats/push-feeds/push-feeds.ts) on MemoryBroker:
// from the settings it follows (patterns expanded to the topics the broker holds), a feed on each
// pushed group, handing what it brings to the same PushScheduler the gateway runs, so that push
// fairness, held order and holdbacks get fast tests (test/unit/queue/push-scheduler-rules.test.ts).
// A held message's renewal restarts its lease, a release gives it back at once; the cap across
// gateways (`max_ack_pending`) has no twin, since there is one gateway here.
import type { Feed } from "../queue/broker.js";
import type { GroupPushes } from "../queue/push-delivery/group-pushes.js";
import { pushedGroups } from "../queue/push-delivery/pushed-groups.js";
import type { PushScheduler } from "../queue/push-delivery/push-scheduler.js";
import type { SettingsStore } from "../queue/settings/settings-store.js";
import type { MemoryBroker } from "./memory-broker.js";

export interface MemoryPushFeedsDeps {
  readonly broker: MemoryBroker;
  readonly settings: Pick<SettingsStore, "entries" | "effective" | "onChange">;
  readonly scheduler: Pick<PushScheduler, "join" | "settled">;
}

interface Fed {
  readonly pushes: GroupPushes;
  feed: Feed | null;
}

export class MemoryPushFeeds {
  readonly #d: MemoryPushFeedsDeps;
  readonly #fed = new Map<string, Fed>();
  #unlisten: (() => void) | null = null;
  #pumping = false;
  #resyncing: Promise<void> = Promise.resolve();

  constructor(deps: MemoryPushFeedsDeps) {
    this.#d = deps;
    deps.broker.onAcked((group, seq) => deps.scheduler.settled(group, seq));
  }

  /** Follows the settings (a change is looked at at once); `resync` after a topic appears. */
  async start(): Promise<void> {
    this.#unlisten = this.#d.settings.onChange(() => void this.resync());
    await this.resync();
  }

  /** Opens a feed on every pushed group it has none on (whose topic exists), closes the rest. */
  resync(): Promise<void> {
    this.#resyncing = this.#resyncing.then(() => this.#resync());
    return this.#resyncing;
  }

  async #resync(): Promise<void> {
    const { broker, settings, scheduler } = this.#d;
    const topics = broker.topics();
    const desired = pushedGroups(settings, (ns) =>
      topics.filter((t) => t.address.namespace.key === ns.key).map((t) => t.address.topic),
    );
    for (const [key, fed] of this.#fed) {
      if (desired.has(key)) continue;
      this.#fed.delete(key);
      fed.pushes.close();
      fed.feed?.close();
    }
    for (const [key, want] of desired) {
      let fed = this.#fed.get(key);
      if (!fed) {
        const group = want.group;
        const pushes = scheduler.join(group, want.settings, {
          wake: () => this.#pumpSoon(),
          epoch: () => broker.groupEpoch(group),
        });
        pushes.noteLease(broker.leaseMsOf(group));
        this.#fed.set(key, (fed = { pushes, feed: null }));
      }
      fed.pushes.update(want.settings);
      if (fed.feed) continue;
      const { pushes } = fed;
      const group = want.group;
      fed.feed = await broker.openFeed(group, {
        demand: () => pushes.demand(),
        take: (delivery) =>
          pushes.take({
            delivery,
            renew: () => void broker.setLease(group, delivery, broker.leaseMsOf(group)),
            release: (delayMs = 0) => void broker.setLease(group, delivery, delayMs),
          }),
        gone: () => pushes.gone(),
      });
    }
  }

  /** Stops feeding; resolves once the pushes under way ended. */
  async stop(): Promise<void> {
    this.#unlisten?.();
    await this.#resyncing;
    const fed = [...this.#fed.values()];
    this.#fed.clear();
    for (const f of fed) {
      f.pushes.close();
      f.feed?.close();
    }
    await Promise.all(fed.map((f) => f.pushes.drained()));
  }

  /** Wakes coalesce into one pump after the current turn (JetStream's feed pulls in the next). */
  #pumpSoon(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    queueMicrotask(() => {
      this.#pumping = false;
      this.#d.broker.pump();
    });
  }
}

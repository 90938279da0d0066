// Push delivery on the in-memory storage ports (test/unit/queue/): a real push client and a real
// HTTP endpoint on loopback, and the Pusher with the real signer over a memoryQueue; the push
// scheduler fed by the twin's push feeds, with pushes the test ends itself.
import { afterAll, beforeAll } from "vitest";
import { createLogger } from "../../src/logger.js";
import { PushAddressPolicy } from "../../src/outbound/push-address-policy.js";
import { PushClient } from "../../src/outbound/push-client.js";
import { PushSigningKeys } from "../../src/outbound/push-signer.js";
import type { MemorySettingsStore } from "../../src/memory/memory-settings-store.js";
import { MemoryPushFeeds } from "../../src/memory/memory-push-feeds.js";
import { NamespaceCounts } from "../../src/queue/admission/in-flight/namespace-counts.js";
import type { Delivery } from "../../src/queue/broker.js";
import type { GroupAddress } from "../../src/queue/namespace.js";
import { NO_PUSH_OBSERVER } from "../../src/queue/push-delivery/push-ports.js";
import { PushScheduler } from "../../src/queue/push-delivery/push-scheduler.js";
import { Pusher } from "../../src/queue/push-delivery/pusher.js";
import {
  DEVELOPMENT_PUSH_URLS,
  PushDestinations,
  parsePushUrlPrefix,
} from "../../src/queue/settings/push-destinations.js";
import type { MemoryQueue } from "./memory-queue.js";
import { startPushApp, type PushApp } from "./push-app.js";

export interface PushEndpoint {
  readonly app: PushApp;
  readonly client: PushClient;
}

/**
 * A push app and a push client, started before the tests of the enclosing suite and closed after
 * them. Read the fields inside tests (they are set in beforeAll).
 */
export function usePushEndpoint(): PushEndpoint {
  const endpoint = {} as { app: PushApp; client: PushClient };
  beforeAll(async () => {
    // No gateway: the app's routes used here are plain webhooks, which call no API.
    endpoint.app = await startPushApp("http://127.0.0.1:9", "unused");
    endpoint.client = new PushClient({ policy: new PushAddressPolicy([]) });
  });
  afterAll(async () => {
    await endpoint.client.close();
    await endpoint.app.close();
  });
  return endpoint;
}

/** A Pusher over `memory`, posting through `client`, signing with keys derived from `secret`. */
export function memoryPusher(memory: MemoryQueue, client: PushClient, secret: string): Pusher {
  return new Pusher({
    handOut: memory.context.handOut,
    acks: memory.context.acks,
    idLeases: memory.context.idLeases,
    idLedger: memory.context.idLedger,
    groupLeases: memory.context.groupLeases,
    broker: memory.broker,
    outcomes: memory.broker,
    ledger: memory.context.pushLedger,
    flow: memory.context.flow,
    transport: client,
    signer: new PushSigningKeys({
      secret,
      region: "iad1",
      keyIds: ["v1"],
      issuer: "urn:vqs:iad1",
      lifetimeSeconds: 300,
    }),
    observer: NO_PUSH_OBSERVER,
    log: createLogger("silent"),
    region: "iad1",
    now: memory.now,
    inlineLimitBytes: 1_048_576,
    destinations: new PushDestinations(DEVELOPMENT_PUSH_URLS.map((u) => parsePushUrlPrefix(u))),
  });
}

/** A push the scheduler started, held open until the test ends it. */
export interface OpenPush {
  readonly group: GroupAddress;
  readonly delivery: Delivery;
  readonly text: string;
  /** Ends the push (as the endpoint's answer would), settling nothing. */
  end(): void;
}

export interface ScheduledPushes {
  readonly scheduler: PushScheduler;
  readonly feeds: MemoryPushFeeds;
  /** Pushes started and not ended yet, oldest first. */
  readonly open: OpenPush[];
  /** The text of every message pushed, in the order the pushes started. */
  readonly started: string[];
  /** The text of every push that has ended (answered and settled), in that order. */
  readonly finished: string[];
}

/**
 * The gateway's PushScheduler over `memory`, fed by MemoryPushFeeds from `settings`, with a cap
 * of `cap` pushes in flight per namespace. A push goes to `push` when given (the real Pusher,
 * say) for the groups it answers true for in `passes`; the others stay open until the test ends
 * them. Stop the feeds in the test's finally (`feeds.stop()`).
 */
export async function scheduledPushes(
  memory: MemoryQueue,
  settings: MemorySettingsStore,
  options: {
    readonly cap: number;
    readonly push?: Pusher;
    readonly passes?: (group: GroupAddress) => boolean;
  },
): Promise<ScheduledPushes> {
  const open: OpenPush[] = [];
  const started: string[] = [];
  const finished: string[] = [];
  const scheduler = new PushScheduler({
    push: (group, delivery, s) => {
      const text = new TextDecoder().decode(delivery.message.payload);
      started.push(text);
      const ended = () => void finished.push(text);
      if (options.push && options.passes?.(group)) {
        return options.push.push(group, delivery, s).finally(ended);
      }
      return new Promise<void>((resolve) => {
        const p: OpenPush = {
          group,
          delivery,
          text,
          end: () => {
            const at = open.indexOf(p);
            if (at >= 0) open.splice(at, 1);
            ended();
            resolve();
          },
        };
        open.push(p);
      });
    },
    ledger: memory.context.pushLedger,
    pushesInFlight: new NamespaceCounts(options.cap),
    flow: memory.context.flow,
    now: memory.now,
    log: createLogger("silent"),
  });
  const feeds = new MemoryPushFeeds({ broker: memory.broker, settings, scheduler });
  await feeds.start();
  return { scheduler, feeds, open, started, finished };
}

/** Lets the scheduler, the feeds and the pushes run until `done` holds (at most `turns` turns). */
export async function settle(
  done: () => boolean | Promise<boolean>,
  turns = 200,
): Promise<boolean> {
  for (let i = 0; i < turns; i++) {
    if (await done()) return true;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return done();
}

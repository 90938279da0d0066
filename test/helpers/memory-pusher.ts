// Push delivery on the in-memory storage ports (test/unit/queue/): a real push client and a real
// HTTP endpoint on loopback, and the Pusher with the real signer over a memoryQueue.
import { afterAll, beforeAll } from "vitest";
import { createLogger } from "../../src/logger.js";
import { PushAddressPolicy } from "../../src/outbound/push-address-policy.js";
import { PushClient } from "../../src/outbound/push-client.js";
import { PushSigningKeys } from "../../src/outbound/push-signer.js";
import { NO_PUSH_OBSERVER } from "../../src/queue/push-delivery/push-ports.js";
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
    broker: memory.broker,
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

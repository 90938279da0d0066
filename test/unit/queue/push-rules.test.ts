// Push delivery's rules on the in-memory storage ports, its clock moved by the test: the Pusher
// with the real push client and signer POSTs to a real HTTP endpoint on loopback, and the message
// is settled by the answer (retry delays, autoAck, initialDelaySeconds). No nats-server: the same
// rules end to end through JetStream and the real client are in
// test/integration/consumers/push.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import type { MemoryBroker } from "../../../src/memory/memory-broker.js";
import { makeNamespace, type GroupAddress } from "../../../src/queue/namespace.js";
import type { Pusher, PushedSettings } from "../../../src/queue/push-delivery/pusher.js";
import { retryDelaySeconds } from "../../../src/queue/push-delivery/retry-delay.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";
import { memoryPusher, usePushEndpoint } from "../../helpers/memory-pusher.js";

const SECRET = "push-rules-secret-push-rules-secret!!";
const namespace = makeNamespace("team", "project", "production", null);
const group: GroupAddress = { namespace, topic: "orders", group: "shipping" };

const endpoint = usePushEndpoint();
let memory: MemoryQueue;
let broker: MemoryBroker;
let pusher: Pusher;
let settings: PushedSettings;

beforeEach(() => {
  memory = memoryQueue({ secret: SECRET, settingsOf: () => settings });
  broker = memory.broker;
  pusher = memoryPusher(memory, endpoint.client, SECRET);
});

function pushedTo(url: string, more: Partial<PushedSettings> = {}): PushedSettings {
  return {
    push: { url, maxConcurrency: 10, timeoutSeconds: 5, autoAck: false },
    retry: { afterSeconds: 30, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
    deadLetter: null,
    flowControl: null,
    ...more,
  };
}

async function publish(text: string) {
  await memory.publish(group, text);
}

/** Pulls what is due for the group and pushes it, as the NATS adapter's feed does. */
async function pushDue(): Promise<number> {
  const batch = (await broker.pull(group, 10)) ?? [];
  await Promise.all(batch.map((d) => pusher.push(group, d, settings)));
  return batch.length;
}

const requestsTo = (name: string) =>
  endpoint.app.requests.filter((r) => r.path === `/hook/${name}`);

describe("push retries", () => {
  it("a failed push brings the message back retry.afterSeconds later, one delivery on", async () => {
    settings = pushedTo(endpoint.app.hookRoute("failing", 500));
    await publish("a");
    expect(await pushDue()).toBe(1);
    expect(requestsTo("failing")).toHaveLength(1);
    expect(requestsTo("failing")[0]!.headers["ce-vqsdeliverycount"]).toBe("1");
    memory.advance(29_000);
    expect(await pushDue()).toBe(0);
    memory.advance(2_000);
    expect(await pushDue()).toBe(1);
    expect(requestsTo("failing").map((r) => r.headers["ce-vqsdeliverycount"])).toEqual(["1", "2"]);
  });

  it("after 32 failed pushes the wait doubles, up to maxBackoffSeconds", () => {
    const retry = { afterSeconds: 30, initialDelaySeconds: 0, maxBackoffSeconds: 3600 };
    expect(retryDelaySeconds(retry, 32)).toBe(30);
    expect(retryDelaySeconds(retry, 33)).toBe(60);
    expect(retryDelaySeconds(retry, 34)).toBe(120);
    expect(retryDelaySeconds(retry, 50)).toBe(3600);
    expect(retryDelaySeconds({ ...retry, afterSeconds: 0 }, 33)).toBe(2);
  });

  it("a 2xx with autoAck acknowledges; without it the message stays leased to the handler", async () => {
    settings = pushedTo(endpoint.app.hookRoute("ok-auto", 200));
    settings = { ...settings, push: { ...settings.push, autoAck: true } };
    await publish("a");
    await pushDue();
    expect((await broker.progress(group))!.inFlight).toBe(0);

    settings = pushedTo(endpoint.app.hookRoute("ok-manual", 204));
    await publish("b");
    await pushDue();
    expect((await broker.progress(group))!.inFlight).toBe(1);
    memory.advance(4_000);
    expect(await pushDue()).toBe(0); // its lease (the push timeout and a margin) holds
  });

  it("retry.initialDelaySeconds holds a message back, and its first push is still delivery 1", async () => {
    settings = pushedTo(endpoint.app.hookRoute("late", 200), {
      retry: { afterSeconds: 30, initialDelaySeconds: 20, maxBackoffSeconds: 3600 },
    });
    await publish("a");
    expect(await pushDue()).toBe(1);
    expect(requestsTo("late")).toHaveLength(0);
    memory.advance(21_000);
    expect(await pushDue()).toBe(1);
    expect(requestsTo("late").map((r) => r.headers["ce-vqsdeliverycount"])).toEqual(["1"]);
  });

  it("a push URL the operator no longer allows is not called, and the message comes back", async () => {
    // Loopback, but outside the development allow-list (localhost and 127.0.0.1).
    settings = pushedTo("http://127.0.0.2:9/hook/blocked");
    await publish("a");
    expect(await pushDue()).toBe(1);
    expect(broker.pushOutcomes.at(-1)?.outcome).toBe("destination_not_allowed");
    memory.advance(31_000);
    expect(await pushDue()).toBe(1);
  });
});

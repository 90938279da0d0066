// ManagementService on the in-memory ports (MemoryBroker, MemoryQueueAdmin, MemorySettingsStore):
// the management API's answers in milliseconds, time moved by the test. The same answers on
// JetStream: test/integration/management/.
import { beforeEach, describe, expect, it } from "vitest";
import { MemoryQueueAdmin } from "../../../src/memory/memory-queue-admin.js";
import { MemorySettingsStore } from "../../../src/memory/memory-settings-store.js";
import { ManagementService } from "../../../src/queue/management/management-service.js";
import { makeNamespace, type TopicAddress } from "../../../src/queue/namespace.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";

const namespace = makeNamespace("team", "project", "production", null);
const orders: TopicAddress = { namespace, topic: "orders" };

let memory: MemoryQueue;
let management: ManagementService;
beforeEach(() => {
  memory = memoryQueue();
  management = new ManagementService({
    admin: new MemoryQueueAdmin({ broker: memory.broker, now: memory.now }),
    broker: memory.broker,
    settings: new MemorySettingsStore(memory.now),
    duplicateIdKey: Buffer.alloc(32, 7),
    now: memory.now,
    storageLimits: () => ({ namespaceBytes: 0, topicBytes: 0 }),
  });
});

describe("management on the in-memory ports", () => {
  it("lists topics, pages a peek by message ID and by time, and purges", async () => {
    await memory.publish(orders, "a");
    memory.advance(60_000);
    const middle = new Date(memory.now()).toISOString();
    await memory.publish(orders, "b");
    await memory.publish(orders, "c");
    await memory.publish({ namespace, topic: "other" }, "x");

    const page = await management.listTopics(namespace, null, 1);
    expect(page.topics.map((t) => [t.name, t.messages])).toEqual([["orders", 3]]);
    expect(page.nextCursor).toBe("orders");
    expect(page.storage.usedBytes).toBeGreaterThan(0);
    expect((await management.listTopics(namespace, "orders", 10)).topics[0]!.name).toBe("other");

    const first = await management.peek(orders, null, 2, false);
    expect(first.messages.map((m) => m.preview)).toEqual(["a", "b"]);
    const rest = await management.peek(orders, first.next, 2, false);
    expect(rest.messages.map((m) => m.preview)).toEqual(["c"]);
    expect(rest.next).toBeNull();
    const since = await management.peek(orders, middle, 10, false);
    expect(since.messages.map((m) => m.preview)).toEqual(["b", "c"]);

    // Peeking leases nothing: a receive still gets every message.
    const got = await memory.queue.receive(
      { ...orders, group: "g" },
      { maxMessages: 10, visibilityTimeoutSeconds: 30, maxConcurrency: null, waitSeconds: 0 },
    );
    expect(got).toHaveLength(3);
    const [group] = (await management.consumers(orders)).consumerGroups;
    expect(group).toMatchObject({ name: "g", inFlight: 3, backlog: 0, deliveries: 3 });

    expect(await management.purge(orders)).toEqual({ purged: 3 });
    expect((await management.topic(orders)).messages).toBe(0);
    await expect(management.purge({ namespace, topic: "missing" })).rejects.toMatchObject({
      code: "topic_not_found",
    });
  });
});

// The delivery rules of QueueService on the in-memory storage ports (src/memory/), its clock moved
// by the test: stale handles, the concurrency limit, receive by ID against ordinary receives, and
// dead-lettering. The same rules against a real nats-server: test/integration/messages/ and
// test/integration/consumers/ (the in-memory ports keep to JetStream's contract: test/contract/).
import { beforeEach, describe, expect, it } from "vitest";
import type { QueueService } from "../../../src/queue/queue-service.js";
import type { ReceiveOptions } from "../../../src/queue/use-cases/receive.js";
import type { ConsumerSettings } from "../../../src/queue/settings/consumer-settings.js";
import { errorCode as code, rulesGroup, useMemoryQueue } from "../../helpers/memory-queue.js";

const orders = rulesGroup("billing");
let settings: ConsumerSettings | null;
let queue: QueueService;
const memory = useMemoryQueue({ settingsOf: () => settings });

beforeEach(() => {
  settings = null;
  queue = memory.queue;
});

const publish = (text: string) => memory.publish(orders, text);

async function receiveOne(options: Partial<ReceiveOptions> = {}) {
  const [m] = await memory.receive(orders, options);
  return m;
}

describe("stale receipt handles", () => {
  it("a handle whose message was released and delivered again is stale", async () => {
    await publish("a");
    const first = (await receiveOne())!;
    await queue.changeVisibility(orders, first.receiptHandle, 0);
    const second = (await receiveOne())!;
    expect(second.messageId).toBe(first.messageId);
    expect(second.deliveryCount).toBe(2);
    expect(await code(queue.acknowledge(orders, first.receiptHandle))).toBe("receipt_handle_stale");
    await queue.acknowledge(orders, second.receiptHandle);
    expect(await receiveOne()).toBeUndefined();
  });

  it("a handle whose lease ran out and whose message was delivered again is stale", async () => {
    await publish("a");
    const first = (await receiveOne({ visibilityTimeoutSeconds: 30 }))!;
    expect(await receiveOne()).toBeUndefined();
    memory.advance(31_000);
    const second = (await receiveOne())!;
    expect(second.deliveryCount).toBe(2);
    expect(await code(queue.changeVisibility(orders, first.receiptHandle, 10))).toBe(
      "receipt_handle_stale",
    );
    await queue.acknowledge(orders, second.receiptHandle);
  });

  it("an extended lease keeps the message from everyone else until it ends", async () => {
    await publish("a");
    const first = (await receiveOne({ visibilityTimeoutSeconds: 10 }))!;
    await queue.changeVisibility(orders, first.receiptHandle, 120);
    memory.advance(60_000);
    expect(await receiveOne()).toBeUndefined();
    memory.advance(61_000);
    expect((await receiveOne())!.deliveryCount).toBe(2);
  });
});

describe("the concurrency limit", () => {
  it("refuses a receive while the group has that many messages in flight", async () => {
    await publish("a");
    await publish("b");
    const first = (await receiveOne({ maxConcurrency: 1 }))!;
    expect(await code(receiveOne({ maxConcurrency: 1 }))).toBe("concurrency_limit_exceeded");
    // A released message that has not come back yet still counts.
    await queue.changeVisibility(orders, first.receiptHandle, 5);
    expect(await code(receiveOne({ maxConcurrency: 1 }))).toBe("concurrency_limit_exceeded");
    // An acknowledged one does not.
    const again = (await receiveOne({ maxConcurrency: 2 }))!;
    await queue.acknowledge(orders, again.receiptHandle);
    expect(await code(receiveOne({ maxConcurrency: 1 }))).toBe("concurrency_limit_exceeded");
    memory.advance(6_000);
    const back = (await receiveOne({ maxConcurrency: 2 }))!;
    expect([back.messageId, back.deliveryCount]).toEqual([first.messageId, 2]);
  });

  it("hands a message out at the limit when bounced ones make up the count", async () => {
    for (const m of ["a", "b", "c"]) await publish(m);
    const a = (await receiveOne({ maxConcurrency: 1 }))!;
    // Two receives at the limit racing through other gateways each bounced a new message.
    const racing = (await memory.broker.pull(orders, 2))!;
    expect(racing.map((d) => d.deliveryCount)).toEqual([1, 1]);
    for (const d of racing) {
      await memory.context.leaseLedger.noteLimitBounce(orders, d.streamSeq, d.deliveryCount);
      await memory.broker.setLease(orders, d, 0);
    }
    expect(await code(receiveOne({ maxConcurrency: 1 }))).toBe("concurrency_limit_exceeded");
    await queue.acknowledge(orders, a.receiptHandle);
    // Counted: the two bounces; in flight: nothing. One is handed out, then the limit holds.
    const b = (await receiveOne({ maxConcurrency: 1 }))!;
    expect(b.messageId).not.toBe(a.messageId);
    expect(await code(receiveOne({ maxConcurrency: 1 }))).toBe("concurrency_limit_exceeded");
    await queue.acknowledge(orders, b.receiptHandle);
    const c = (await receiveOne({ maxConcurrency: 1 }))!;
    expect(c.messageId).not.toBe(b.messageId);
    await queue.acknowledge(orders, c.receiptHandle);
    expect(await receiveOne({ maxConcurrency: 1 })).toBeUndefined();
  });

  it("receives by ID at the limit when bounced ones make up the count", async () => {
    const published = [];
    for (const m of ["a", "b", "c"]) published.push(await publish(m));
    const c = published[2]!;
    if (c.deferred) throw new Error("not deferred in memory");
    // Two receives at the limit racing through other gateways each bounced a new message.
    const racing = (await memory.broker.pull(orders, 2))!;
    for (const d of racing) {
      await memory.context.leaseLedger.noteLimitBounce(orders, d.streamSeq, d.deliveryCount);
      await memory.broker.setLease(orders, d, 0);
    }
    const options = { visibilityTimeoutSeconds: 30, maxConcurrency: 1 };
    const got = await queue.receiveById(orders, c.messageId, options);
    expect([got.messageId, got.deliveryCount]).toEqual([c.messageId, 1]);
  });

  it("hands out no more than the room left under the limit", async () => {
    for (const m of ["a", "b", "c"]) await publish(m);
    const got = await memory.receive(orders, { maxMessages: 10, maxConcurrency: 2 });
    expect(got).toHaveLength(2);
  });
});

describe("receive by ID and ordinary receives", () => {
  it("a message leased by ID is not handed out by a receive, and once acknowledged is gone", async () => {
    const published = await publish("a");
    if (published.deferred) throw new Error("not deferred in memory");
    const byId = await queue.receiveById(orders, published.messageId, {
      visibilityTimeoutSeconds: 30,
      maxConcurrency: null,
    });
    expect(byId.deliveryCount).toBe(1);
    expect(await receiveOne()).toBeUndefined();
    expect(
      await code(
        queue.receiveById(orders, published.messageId, {
          visibilityTimeoutSeconds: 30,
          maxConcurrency: null,
        }),
      ),
    ).toBe("message_not_available");
    await queue.acknowledge(orders, byId.receiptHandle);
    expect(
      await code(
        queue.receiveById(orders, published.messageId, {
          visibilityTimeoutSeconds: 30,
          maxConcurrency: null,
        }),
      ),
    ).toBe("message_already_acknowledged");
    memory.advance(120_000);
    expect(await receiveOne()).toBeUndefined();
  });

  it("a message a receive holds cannot be taken by ID until its lease ends", async () => {
    const byIdOptions = { visibilityTimeoutSeconds: 30, maxConcurrency: null };
    const first = await publish("a");
    const second = await publish("b");
    if (first.deferred || second.deferred) throw new Error("not deferred in memory");
    // The group uses receive by ID from now on: its receives record what they hand out.
    await queue.receiveById(orders, second.messageId, byIdOptions);
    const received = (await receiveOne({ visibilityTimeoutSeconds: 30 }))!;
    expect(received.messageId).toBe(first.messageId);
    expect(await code(queue.receiveById(orders, first.messageId, byIdOptions))).toBe(
      "message_not_available",
    );
    memory.advance(31_000);
    const byId = await queue.receiveById(orders, first.messageId, byIdOptions);
    expect(byId.deliveryCount).toBe(2);
    expect(await code(queue.acknowledge(orders, received.receiptHandle))).toBe(
      "receipt_handle_stale",
    );
    await queue.acknowledge(orders, byId.receiptHandle);
  });
});

describe("dead letters", () => {
  it("moves a message delivered maxDeliveries times to the dead-letter topic instead", async () => {
    settings = {
      push: null,
      retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: { topic: "orders-dead", maxDeliveries: 2 },
      flowControl: null,
    };
    const published = await publish("poison");
    if (published.deferred) throw new Error("not deferred in memory");
    for (let delivery = 1; delivery <= 2; delivery++) {
      const m = (await receiveOne())!;
      expect(m.deliveryCount).toBe(delivery);
      await queue.changeVisibility(orders, m.receiptHandle, 0);
    }
    expect(await receiveOne()).toBeUndefined();
    expect(await memory.context.leaseLedger.deadLettered(orders)).toBe(1);
    const dead = await memory.receive({ ...orders, topic: "orders-dead", group: "ops" });
    expect(dead).toHaveLength(1);
    expect(new TextDecoder().decode(dead[0]!.payload)).toBe("poison");
    expect(dead[0]!.deadLetter).toEqual({
      topic: "orders",
      consumerGroup: "billing",
      messageId: published.messageId,
      deliveryCount: 3,
    });
  });
});

// Dead letters and redrive on the in-memory storage ports (src/memory/), the clock moved by the
// test: a message delivered `maxDeliveries` times without an acknowledgement goes to the group's
// dead-letter topic on its next delivery (by receive, receive by ID or push), carrying where it
// came from and the time it had left; other groups keep it; redrive moves dead letters back,
// oldest first, each once, as new messages. End to end through JetStream, with gateways racing
// and failing halfway: test/integration/consumers/dead-letters.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import {
  makeNamespace,
  type GroupAddress,
  type Namespace,
  type TopicAddress,
} from "../../../src/queue/namespace.js";
import type { ReceiveOptions } from "../../../src/queue/use-cases/receive.js";
import type { ConsumerSettings } from "../../../src/queue/settings/consumer-settings.js";
import {
  errorCode as code,
  RULES_NAMESPACE as namespace,
  rulesGroup,
  useMemoryQueue,
} from "../../helpers/memory-queue.js";
import { memoryPusher, usePushEndpoint } from "../../helpers/memory-pusher.js";

const SECRET = "dead-letter-rules-secret-dead-letter!";
const workers = rulesGroup("workers");
const dead: TopicAddress = { namespace, topic: "orders-dead" };

let settings: ConsumerSettings | null;
const memory = useMemoryQueue({
  secret: SECRET,
  settingsOf: (g) => (g.group === "workers" ? settings : null),
});

beforeEach(() => {
  settings = null;
});

const deadLetterAfter = (maxDeliveries: number, topic = "orders-dead"): ConsumerSettings => ({
  push: null,
  retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
  deadLetter: { topic, maxDeliveries },
  flowControl: null,
});

const publish = (text: string, to: TopicAddress = workers) => memory.publishId(to, text);

const options = (more: Partial<ReceiveOptions> = {}): ReceiveOptions => ({
  maxMessages: 10,
  visibilityTimeoutSeconds: 1,
  maxConcurrency: null,
  ...more,
});

const receive = (group: GroupAddress, more: Partial<ReceiveOptions> = {}) =>
  memory.receive(group, options(more));

/** Everything a fresh group sees in a topic. */
async function contents(topic: TopicAddress) {
  return receive({ ...topic, group: `look-${Math.random()}` }, { maxMessages: 1000 });
}

const text = (payload: Uint8Array) => new TextDecoder().decode(payload);

/** Dead-letters `n` messages of the group (each delivered once, its lease run out). */
async function deadLetterSome(n: number): Promise<void> {
  settings = deadLetterAfter(1);
  for (let i = 0; i < n; i++) await publish(`m${i}`);
  expect(await receive(workers, { maxMessages: n })).toHaveLength(n);
  memory.advance(1_100);
  expect(await receive(workers, { maxMessages: n })).toEqual([]);
  expect(await memory.context.leaseLedger.deadLettered(workers)).toBe(n);
}

describe("dead letters", () => {
  it("moves a polled message whose leases ran out maxDeliveries times, with its origin", async () => {
    settings = deadLetterAfter(2);
    const id = await publish("poison");
    const publishedAt = memory.now();
    for (const count of [1, 2]) {
      const [m] = await receive(workers);
      expect(m!.deliveryCount).toBe(count);
      memory.advance(1_100); // the lease runs out unacknowledged
    }
    // The third delivery would be one too many: it goes to the dead-letter topic instead.
    expect(await receive(workers)).toEqual([]);
    const [copy, ...more] = await contents(dead);
    expect(more).toEqual([]);
    expect(text(copy!.payload)).toBe("poison");
    expect(copy!.contentType).toBe("text/plain");
    expect(copy!.deliveryCount).toBe(1);
    expect(copy!.deadLetter).toEqual({
      topic: "orders",
      consumerGroup: "workers",
      messageId: id,
      deliveryCount: 3,
    });
    // The time to live is kept (to the second): it expires when the original would have.
    expect(Math.abs(copy!.expiresAt.getTime() - (publishedAt + 3600_000))).toBeLessThan(1000);
    // Another group of the source topic still has it, from its first delivery.
    const [other] = await receive({ ...workers, group: "auditors" });
    expect([text(other!.payload), other!.deliveryCount]).toEqual(["poison", 1]);
    // Receive by ID in the group that dead-lettered it: it is gone from that group.
    expect(await code(memory.queue.receiveById(workers, id, options()))).toMatch(
      "message_already_acknowledged",
    );
  });

  it("counts deliveries by ID, and answers message_dead_lettered for the one too many", async () => {
    settings = deadLetterAfter(2);
    const id = await publish("by id");
    for (const count of [1, 2]) {
      const got = await memory.queue.receiveById(workers, id, options());
      expect(got.deliveryCount).toBe(count);
      memory.advance(1_100);
    }
    expect(await code(memory.queue.receiveById(workers, id, options()))).toBe(
      "message_dead_lettered",
    );
    expect((await contents(dead)).map((c) => c.deadLetter?.deliveryCount)).toEqual([3]);
    expect(await receive(workers)).toEqual([]);
    expect(await code(memory.queue.receiveById(workers, id, options()))).not.toBe("(no error)");
    expect(await contents(dead)).toHaveLength(1); // once per message and group
  });

  it("puts a deployment's dead letters in the deployment's own topic", async () => {
    const deployment: Namespace = makeNamespace("team", "project", "production", "dpl_1");
    const group: GroupAddress = { namespace: deployment, topic: "orders", group: "workers" };
    settings = deadLetterAfter(1);
    await publish("deployment's", group);
    expect(await receive(group)).toHaveLength(1);
    memory.advance(1_100);
    expect(await receive(group)).toEqual([]);
    const inDeployment = await contents({ namespace: deployment, topic: "orders-dead" });
    expect(inDeployment.map((m) => text(m.payload))).toEqual(["deployment's"]);
    expect(await contents(dead)).toEqual([]);
  });

  it("leaves a message that was acknowledged in time, or a group without the setting, alone", async () => {
    settings = deadLetterAfter(1);
    await publish("fine");
    const [m] = await receive(workers);
    await memory.queue.acknowledge(workers, m!.receiptHandle);
    const plain: GroupAddress = { ...workers, group: "plain" };
    for (let count = 1; count <= 3; count++) {
      expect((await receive(plain)).map((d) => d.deliveryCount)).toEqual([count]);
      memory.advance(1_100);
    }
    expect(await receive(workers)).toEqual([]);
    expect(await contents(dead)).toEqual([]);
  });
});

describe("dead letters of pushed messages", () => {
  const endpoint = usePushEndpoint();

  it("moves a pushed message whose handler always fails after maxDeliveries pushes", async () => {
    const url = endpoint.app.hookRoute("dl-always-fails", 500);
    const pushed = {
      push: { url, maxConcurrency: 10, timeoutSeconds: 5, autoAck: true },
      retry: { afterSeconds: 0, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: { topic: "orders-dead", maxDeliveries: 3 },
      flowControl: null,
    };
    settings = pushed;
    const pusher = memoryPusher(memory, endpoint.client, SECRET);
    await publish("always fails");
    // Pull what is due and push it, as the NATS adapter's feed does, until nothing comes.
    for (let round = 0; round < 10; round++) {
      const batch = (await memory.broker.pull(workers, 10)) ?? [];
      await Promise.all(batch.map((d) => pusher.push(workers, d, pushed)));
      memory.advance(2_000);
    }
    const copies = await contents(dead);
    expect(copies.map((c) => c.deadLetter?.deliveryCount)).toEqual([4]);
    expect(endpoint.app.requests.filter((r) => r.path === "/hook/dl-always-fails")).toHaveLength(3);
  });
});

describe("redrive", () => {
  it("moves dead letters back to their source, oldest first, each once, from delivery 1", async () => {
    await deadLetterSome(5);
    expect(await memory.queue.redrive(dead, { target: null, limit: 2 })).toEqual({
      moved: 2,
      remaining: 3,
    });
    // Interrupted there, resumed: the rest, none twice.
    expect(await memory.queue.redrive(dead, { target: null, limit: 1000 })).toEqual({
      moved: 3,
      remaining: 0,
    });
    expect(await memory.queue.redrive(dead, { target: null, limit: 1000 })).toEqual({
      moved: 0,
      remaining: 0,
    });
    // The group that dead-lettered them gets them again, as new messages, oldest first.
    const back = await receive(workers, { maxMessages: 100 });
    expect(back.map((m) => text(m.payload))).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    expect(back.every((m) => m.deliveryCount === 1 && m.deadLetter === null)).toBe(true);
  });

  it("moves to a given topic, and a redrive racing another moves each message once", async () => {
    await deadLetterSome(20);
    const target = { namespace, topic: "orders-again" };
    const results = await Promise.all([
      memory.queue.redrive(dead, { target: target.topic, limit: 1000 }),
      memory.queue.redrive(dead, { target: target.topic, limit: 1000 }),
    ]);
    expect(results.reduce((n, r) => n + r.moved, 0)).toBeGreaterThanOrEqual(20);
    const copies = await contents(target);
    expect(copies.map((c) => text(c.payload)).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i}`).sort(),
    );
    expect(await receive(workers)).toEqual([]); // not back in the source
  });

  it("keeps the time a dead letter had left, and drops one that expired", async () => {
    await deadLetterSome(1);
    memory.advance(3600_000);
    expect(await memory.queue.redrive(dead, { target: null, limit: 10 })).toEqual({
      moved: 0,
      remaining: 0,
    });
    expect(await receive(workers)).toEqual([]);
  });

  it("refuses a missing topic and a redrive into the dead-letter topic itself", async () => {
    await deadLetterSome(1);
    expect(
      await code(memory.queue.redrive({ namespace, topic: "nothing" }, { target: null, limit: 1 })),
    ).toBe("topic_not_found");
    expect(await code(memory.queue.redrive(dead, { target: dead.topic, limit: 1 }))).toBe(
      "invalid_request_body",
    );
    expect(await memory.queue.redrive(dead, { target: null, limit: 10 })).toEqual({
      moved: 1,
      remaining: 0,
    });
  });
});

// A group's busiest flow-control keys (src/queue/management/busiest-keys.ts) on the in-memory
// ports, the clock moved by the test: in flight from the keys' live slot holders, waiting counted
// in the sample of the group's oldest unacknowledged messages, the key's value read back from a
// message, and the work bounded. On a real nats-server: test/integration/management/busiest-keys.
import { randomBytes } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import {
  busiestKeys,
  WAITING_SAMPLE_MESSAGES,
} from "../../../src/queue/management/busiest-keys.js";
import {
  DEFAULT_SETTINGS,
  type ConsumerSettings,
} from "../../../src/queue/settings/consumer-settings.js";
import { memoryQueue, rulesGroup, type MemoryQueue } from "../../helpers/memory-queue.js";

const group = rulesGroup("workers");
const flow = { key: "tenant", concurrency: 1, rate: null, ordered: false };
let settings: ConsumerSettings;
let memory: MemoryQueue;
beforeEach(() => {
  settings = { ...DEFAULT_SETTINGS, flowControl: flow };
  memory = memoryQueue({ settingsOf: () => settings });
});

async function publish(text: string, key: string | null): Promise<void> {
  await memory.broker.publish(group, {
    payload: new TextEncoder().encode(text),
    contentType: "text/plain",
    retentionSeconds: 3600,
    delaySeconds: 0,
    idempotencyKey: null,
    nonce: randomBytes(4).toString("hex"),
    trace: null,
    headers: key === null ? {} : { tenant: key },
  });
}

const receive = (visibilityTimeoutSeconds = 30) =>
  memory.queue.receive(group, { maxMessages: 10, visibilityTimeoutSeconds, maxConcurrency: null });

const keys = (limit = 20) =>
  busiestKeys(
    {
      slots: memory.broker.flowSlots,
      broker: memory.broker,
      flowOf: () => settings.flowControl,
      now: memory.now,
    },
    group,
    limit,
  );

describe("busiest keys", () => {
  it("counts in flight and waiting per key, busiest first, with the key's value", async () => {
    for (const [t, k] of [
      ["a1", "a"],
      ["a2", "a"],
      ["a3", "a"],
      ["b1", "b"],
      ["n1", null],
    ] as const) {
      await publish(t, k);
    }
    expect(await receive()).toHaveLength(3); // a1, b1, n1 (no key: not limited)
    const got = await keys();
    expect(got.keys.map((k) => [k.key, k.inFlight, k.waiting])).toEqual([
      ["a", 1, 2],
      ["b", 1, 0],
    ]);
    expect(got.keyRecords).toEqual({ read: 2, complete: true });
    expect(got.waitingSample).toEqual({ messages: 5, fromSequence: 1, complete: true });
    expect((await keys(1)).keys.map((k) => k.key)).toEqual(["a"]);
  });

  it("stops counting a holder whose lease ended, and lists a key neither held nor waiting no more", async () => {
    await publish("b1", "b");
    const [b1] = await receive(5);
    expect((await keys()).keys).toMatchObject([{ key: "b", inFlight: 1, waiting: 0 }]);
    memory.advance(5_001); // the lease ended: b1 waits again, holding nothing
    expect((await keys()).keys).toMatchObject([{ key: "b", inFlight: 0, waiting: 1 }]);
    const [again] = await receive();
    expect(again!.messageId).toBe(b1!.messageId);
    await memory.queue.acknowledge(group, again!.receiptHandle);
    expect((await keys()).keys).toEqual([]);
  });

  it("reads a key's value from its holder's message when the sample lacks it, cut at 256 characters", async () => {
    const long = "k".repeat(300);
    await publish("l1", long);
    expect(await receive()).toHaveLength(1);
    const [k] = (await keys()).keys;
    expect(k).toMatchObject({ key: long.slice(0, 256), keyTruncated: true, inFlight: 1 });
    expect(k!.keyHash).toMatch(/^[0-9a-f]{32}$/);
  });

  it("samples at most its bound of messages and says the sample is partial", async () => {
    for (let i = 0; i <= WAITING_SAMPLE_MESSAGES; i++) await publish(`m${i}`, "a");
    expect(await receive()).toHaveLength(1); // m0 (the group is made), the others wait
    const got = await keys();
    expect(got.waitingSample).toEqual({
      messages: WAITING_SAMPLE_MESSAGES,
      fromSequence: 1,
      complete: false,
    });
    expect(got.keys).toMatchObject([
      { key: "a", inFlight: 1, waiting: WAITING_SAMPLE_MESSAGES - 1 },
    ]);
  });

  it("answers a group without flow control with no keys, and a missing group with 404", async () => {
    settings = DEFAULT_SETTINGS;
    await publish("a1", "a");
    await receive();
    expect(await keys()).toEqual({
      flowControl: null,
      keys: [],
      keyRecords: { read: 0, complete: true },
      waitingSample: { messages: 0, fromSequence: 1, complete: true },
    });
    await expect(
      busiestKeys(
        {
          slots: memory.broker.flowSlots,
          broker: memory.broker,
          flowOf: () => flow,
          now: memory.now,
        },
        rulesGroup("nobody"),
        20,
      ),
    ).rejects.toMatchObject({ code: "group_not_found" });
  });
});

// The concurrency limit (Vqs-Max-Concurrency) under contention on the in-memory storage ports:
// consumers that receive and acknowledge in a loop, each holding what it got for a moment, get
// every message while never more than the limit is leased at once, and messages released unseen
// at the limit do not keep the group refusing. More of its rules: delivery-rules.test.ts. Two
// gateways racing through JetStream: test/integration/consumers/concurrency-limit.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import { isAppError } from "../../../src/errors.js";
import { makeNamespace, type GroupAddress } from "../../../src/queue/namespace.js";
import type { ReceivedMessage } from "../../../src/queue/delivery/received-message.js";
import { memoryQueue, type MemoryQueue } from "../../helpers/memory-queue.js";

const namespace = makeNamespace("team", "project", "production", null);
const group: GroupAddress = { namespace, topic: "orders", group: "workers" };

let memory: MemoryQueue;
beforeEach(() => {
  memory = memoryQueue();
});

const receive = (maxConcurrency: number, maxMessages = 1) =>
  memory.queue.receive(group, { maxMessages, visibilityTimeoutSeconds: 30, maxConcurrency });

describe("the concurrency limit under contention", () => {
  it("delivers every message to looping consumers, never past the limit", async () => {
    const bodies = Array.from({ length: 8 }, (_, i) => `m${i}`);
    for (const b of bodies) await memory.publish(group, b);
    const delivered = new Set<string>();
    let refusals = 0;
    let most = 0;
    // Four consumers, turn by turn: each receives, holds what it got for a turn (so the others
    // meet the group at its limit), then acknowledges it.
    const held: (ReceivedMessage | null)[] = [null, null, null, null];
    for (let turn = 0; turn < 200 && delivered.size < bodies.length; turn++) {
      const i = turn % held.length;
      const mine = held[i];
      if (mine) {
        await memory.queue.acknowledge(group, mine.receiptHandle);
        held[i] = null;
        continue;
      }
      try {
        const got = await receive(1);
        expect(got.length).toBeLessThanOrEqual(1);
        if (got[0]) {
          held[i] = got[0];
          delivered.add(new TextDecoder().decode(got[0].payload));
        }
      } catch (err) {
        if (!isAppError(err) || err.code !== "concurrency_limit_exceeded") throw err;
        expect(err.retryAfterSeconds).toBeGreaterThan(0);
        refusals++;
      }
      most = Math.max(most, held.filter((m) => m !== null).length);
    }
    expect(refusals).toBeGreaterThan(0); // the limit was met
    expect([...delivered].sort()).toEqual([...bodies].sort());
    expect(most).toBe(1);
  });

  it("refuses with a Retry-After at the limit, and hands out again once one is acknowledged", async () => {
    for (const b of ["a", "b", "c"]) await memory.publish(group, b);
    const got = await receive(2, 10);
    expect(got).toHaveLength(2);
    const refused = await receive(2).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isAppError(refused) && [refused.code, refused.status]).toEqual([
      "concurrency_limit_exceeded",
      429,
    ]);
    expect(isAppError(refused) && refused.retryAfterSeconds).toBeGreaterThan(0);
    await memory.queue.acknowledge(group, got[0]!.receiptHandle);
    expect(await receive(2)).toHaveLength(1);
  });
});

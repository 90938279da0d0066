// Stale receipt handles on the in-memory storage ports, the clock moved by the test: a lease cut
// short through its own handle (released, or shortened) keeps that handle current until the
// message is delivered again, and refuses it from then on while the new holder's handle works.
// The same across two gateways through JetStream: test/integration/messages/stale-handles.test.ts;
// more stale-handle rules (a lease that ran out, an extended one): delivery-rules.test.ts.
import { describe, expect, it } from "vitest";
import { errorCode as code, rulesGroup, useMemoryQueue } from "../../helpers/memory-queue.js";

const group = rulesGroup("g");
const memory = useMemoryQueue();

const receiveOne = async () => (await memory.receive(group))[0];

describe("handles of a lease cut short", () => {
  it("refuses the released handle once the message is delivered again, for every operation", async () => {
    await memory.publish(group, "x");
    const first = (await receiveOne())!;
    await memory.queue.changeVisibility(group, first.receiptHandle, 0); // release
    const second = (await receiveOne())!;
    expect(second.deliveryCount).toBe(2);
    const { queue } = memory;
    expect(await code(queue.acknowledge(group, first.receiptHandle))).toBe("receipt_handle_stale");
    expect(await code(queue.changeVisibility(group, first.receiptHandle, 30))).toBe(
      "receipt_handle_stale",
    );
    expect(await code(queue.changeVisibility(group, first.receiptHandle, 0))).toBe(
      "receipt_handle_stale",
    );
    // Nothing changed: the current holder still has it, and its handle works, twice.
    expect(await receiveOne()).toBeUndefined();
    await queue.acknowledge(group, second.receiptHandle);
    await queue.acknowledge(group, second.receiptHandle);
    memory.advance(60_000);
    expect(await receiveOne()).toBeUndefined();
  });

  it("keeps a shortened handle valid until the message is delivered again", async () => {
    await memory.publish(group, "y");
    const { receiptHandle } = (await receiveOne())!;
    await memory.queue.changeVisibility(group, receiptHandle, 30); // longer: no cut
    await memory.queue.changeVisibility(group, receiptHandle, 1); // shorter: cut
    // Before the message comes back, the handle is still the current one.
    await memory.queue.changeVisibility(group, receiptHandle, 1);
    await memory.queue.acknowledge(group, receiptHandle);
    memory.advance(1_500);
    expect(await receiveOne()).toBeUndefined();
  });

  it("refuses a shortened handle once its message came back", async () => {
    await memory.publish(group, "z");
    const first = (await receiveOne())!;
    await memory.queue.changeVisibility(group, first.receiptHandle, 1);
    memory.advance(1_500);
    const second = (await receiveOne())!;
    expect(second.deliveryCount).toBe(2);
    expect(await code(memory.queue.acknowledge(group, first.receiptHandle))).toBe(
      "receipt_handle_stale",
    );
    await memory.queue.acknowledge(group, second.receiptHandle);
  });
});

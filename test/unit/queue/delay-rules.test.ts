// Delayed messages (Vqs-Delay-Seconds) on the in-memory storage ports, the clock moved by the
// test: a delayed message is invisible, to receives and to receive by ID, until it is due, is
// then delivered as its first delivery, keeps nothing else waiting, and a delay past the
// retention is capped at it (the message expires unseen). Through JetStream's timers (lost
// timers re-armed, malformed ones dropped, the stored form): test/integration/messages/api.test.ts.
import { describe, expect, it } from "vitest";
import { errorCode as code, rulesGroup, useMemoryQueue } from "../../helpers/memory-queue.js";

const group = rulesGroup("g");
const memory = useMemoryQueue();

const publish = (text: string, delaySeconds: number, retentionSeconds = 3600) =>
  memory.publishId(group, text, { delaySeconds, retentionSeconds });

const receive = async (g = group) =>
  (await memory.receive(g, { maxMessages: 10 })).map((m) => ({
    text: new TextDecoder().decode(m.payload),
    id: m.messageId,
    count: m.deliveryCount,
  }));

const byId = (id: string, g = group) =>
  memory.queue.receiveById(g, id, { visibilityTimeoutSeconds: 30, maxConcurrency: null });

describe("delayed messages", () => {
  it("keeps a delayed message invisible until due, then delivers it with deliveryCount 1", async () => {
    const id = await publish("later", 2);
    expect(await receive()).toEqual([]);
    expect(await code(byId(id, { ...group, group: "other" }))).toBe("message_not_available");
    memory.advance(1_999);
    expect(await receive()).toEqual([]);
    memory.advance(1);
    expect(await receive()).toEqual([{ text: "later", id, count: 1 }]);
    // Another group gets it too once due, by ID as well.
    expect((await byId(id, { ...group, group: "other" })).deliveryCount).toBe(1);
  });

  it("keeps nothing published after it waiting, and comes after them when due", async () => {
    await publish("delayed", 5);
    await publish("now", 0);
    expect((await receive()).map((m) => m.text)).toEqual(["now"]);
    memory.advance(5_000);
    expect((await receive()).map((m) => m.text)).toEqual(["delayed"]);
    memory.advance(20_000);
    expect(await receive()).toEqual([]); // each delivered once (its lease still held)
  });

  it("caps a delay longer than the retention at the retention: the message expires unseen", async () => {
    const id = await publish("never", 3600, 60);
    expect(await code(byId(id))).toBe("message_not_available");
    memory.advance(59_000);
    expect(await receive()).toEqual([]);
    memory.advance(1_000);
    expect(await receive()).toEqual([]);
    expect(await code(byId(id))).toBe("message_not_found");
    memory.advance(3600_000);
    expect(await receive()).toEqual([]);
  });
});

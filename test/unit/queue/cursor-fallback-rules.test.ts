// Where a new group starts (`Vqs-Cursor-Fallback`, the client's `cursorFallback`) on the
// in-memory ports: a receive that makes the group with "latest" starts it after the topic's last
// message; an existing group is never moved; "earliest" (the default) replays the topic; a waiting
// receive that finds no topic gets all of it once it exists. On a real nats-server with the real
// client: test/integration/consumers/cursor-fallback.test.ts; the ports: test/contract/.
import { describe, expect, it } from "vitest";
import { rulesGroup, useMemoryQueue } from "../../helpers/memory-queue.js";

const memory = useMemoryQueue();
const text = (m: { payload: Uint8Array }) => new TextDecoder().decode(m.payload);

describe("a new group's start", () => {
  it("with latest is after the topic's last message; an existing group is not moved", async () => {
    const existing = rulesGroup("existing");
    await memory.publishId(existing, "before 1");
    expect((await memory.receive(existing)).map(text)).toEqual(["before 1"]);
    await memory.publishId(existing, "before 2");

    const fresh = rulesGroup("fresh");
    expect(await memory.receive(fresh, { cursorFallback: "latest" })).toEqual([]);
    await memory.publishId(existing, "after");
    const got = await memory.receive(fresh, { cursorFallback: "latest", maxMessages: 10 });
    expect(got.map(text)).toEqual(["after"]);

    const rest = await memory.receive(existing, { cursorFallback: "latest", maxMessages: 10 });
    expect(rest.map(text)).toEqual(["before 2", "after"]);
    const replay = await memory.receive(rulesGroup("replay"), {
      cursorFallback: "earliest",
      maxMessages: 10,
    });
    expect(replay.map(text)).toEqual(["before 1", "before 2", "after"]);
  });

  it("with latest still gets a delayed message that falls due after it", async () => {
    const g = rulesGroup("late");
    await memory.publishId(g, "now");
    await memory.publishId(g, "in 5 s", { delaySeconds: 5 });
    expect(await memory.receive(g, { cursorFallback: "latest" })).toEqual([]);
    memory.advance(5_000);
    expect((await memory.receive(g)).map(text)).toEqual(["in 5 s"]);
  });

  it("of a waiting receive that found no topic takes all of the topic once it exists", async () => {
    const g = rulesGroup("waiting");
    const waiting = memory.receive(g, { cursorFallback: "latest", waitSeconds: 5 });
    await memory.publishId(g, "creates the topic");
    expect((await waiting).map(text)).toEqual(["creates the topic"]);
  });
});

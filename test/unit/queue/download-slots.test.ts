// The download slots of a gateway (VQS_MAX_LARGE_DOWNLOADS): a slot now or none, waiters served
// in turn (those of leased messages first) and before new takers, a waiter that leaves (its reader gone, its lease over) frees its
// place, a release counts once. The downloads themselves, against a real nats-server:
// test/integration/messages/large-downloads.test.ts.
import { describe, expect, it } from "vitest";
import { DownloadSlots } from "../../../src/queue/download-slots.js";

const LONG = 60_000;

describe("download slots", () => {
  it("gives slots up to the cap, then none; a release counts once", () => {
    const slots = new DownloadSlots(2);
    const a = slots.tryTake();
    const b = slots.tryTake();
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(slots.tryTake()).toBeNull();
    a!.release();
    a!.release();
    expect(slots.used).toBe(1);
    expect(slots.tryTake()).not.toBeNull();
    expect(slots.tryTake()).toBeNull();
  });

  it("serves waiters in turn, before anyone who only tries", async () => {
    const seen: string[] = [];
    const slots = new DownloadSlots(1, () => seen.push(`${slots.used}/${slots.waiting}`));
    const held = slots.tryTake()!;
    const first = slots.take(LONG, null);
    const second = slots.take(LONG, null);
    expect(slots.waiting).toBe(2);
    held.release();
    expect(slots.tryTake()).toBeNull(); // the slot went to the first waiter
    const one = await first;
    expect(slots.waiting).toBe(1);
    one!.release();
    const two = await second;
    expect(two).not.toBeNull();
    expect(slots.used).toBe(1);
    expect(slots.waiting).toBe(0);
    two!.release();
    expect(slots.used).toBe(0);
    expect(seen.at(-1)).toBe("0/0");
  });

  it("serves the downloads of leased messages before receives by ID that waited longer", async () => {
    const slots = new DownloadSlots(1);
    const held = slots.tryTake()!;
    const order: string[] = [];
    const byId = slots.take(LONG, null).then((s) => (order.push("by id"), s));
    const leased = slots.take(LONG, null, true).then((s) => (order.push("leased"), s));
    held.release();
    (await leased)!.release();
    (await byId)!.release();
    expect(order).toEqual(["leased", "by id"]);
    expect(slots.used).toBe(0);
  });

  it("lets a waiter leave when its signal aborts or its time is up, freeing its place", async () => {
    const slots = new DownloadSlots(1);
    const held = slots.tryTake()!;
    const gone = new AbortController();
    const left = slots.take(LONG, gone.signal);
    const timedOut = slots.take(0, null);
    const stays = slots.take(LONG, null);
    expect(slots.waiting).toBe(3);
    gone.abort();
    expect(await left).toBeNull();
    expect(await timedOut).toBeNull();
    expect(slots.waiting).toBe(1);
    held.release();
    expect(await stays).not.toBeNull();
    expect(slots.used).toBe(1);
    expect(await slots.take(LONG, gone.signal)).toBeNull(); // aborted already: not queued
    expect(slots.waiting).toBe(0);
  });
});

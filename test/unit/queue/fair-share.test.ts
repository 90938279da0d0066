// The fair share of the store among tenants (src/queue/admission/in-flight/fair-share.ts): bounded work
// in flight per tenant and per gateway, waiting work served round robin across tenants, FIFO
// within a tenant, and nothing refused.
import { describe, expect, it } from "vitest";
import { FairShare, SHARED_MS } from "../../../src/queue/admission/in-flight/fair-share.js";

const clock = () => 0;

/** An operation the test finishes by hand; `started` tells whether it got its slot. */
function held() {
  let finish!: () => void;
  const op = { started: false, done: new Promise<void>((r) => (finish = r)), finish };
  return op;
}

/** Lets granted operations start (grants resolve promises). */
const settle = () => new Promise<void>((r) => setImmediate(r));

function start(share: FairShare, tenant: string, order: string[], name: string, raises = true) {
  const op = held();
  const result = share.run(
    tenant,
    () => {
      op.started = true;
      order.push(name);
      return op.done.then(() => name);
    },
    raises,
  );
  return Object.assign(op, { result });
}

describe("fair share", () => {
  it("bounds a tenant's operations in flight and starts the next as one ends, in order", async () => {
    const share = new FairShare(clock, { total: 100, perTenant: 2, alone: 2 });
    const order: string[] = [];
    const ops = Array.from({ length: 5 }, (_, i) => start(share, "a", order, `a${i}`));
    await settle();
    expect(order).toEqual(["a0", "a1"]);
    expect(share.figures).toEqual({ inFlight: 2, waiting: 3, tenants: 1 });
    ops[1]!.finish();
    await expect(ops[1]!.result).resolves.toBe("a1");
    await settle();
    expect(order).toEqual(["a0", "a1", "a2"]);
    for (const op of ops) op.finish();
    await Promise.all(ops.map((o) => o.result));
    expect(order).toEqual(["a0", "a1", "a2", "a3", "a4"]);
    expect(share.figures).toEqual({ inFlight: 0, waiting: 0, tenants: 0 });
  });

  it("gives a quiet tenant a slot at once beside a tenant at its bound with thousands waiting", async () => {
    const share = new FairShare(clock, { total: 100, perTenant: 4, alone: 4 });
    const order: string[] = [];
    const flood = Array.from({ length: 2000 }, (_, i) => start(share, "a", order, `a${i}`));
    const quiet = start(share, "b", order, "b0");
    await settle();
    expect(quiet.started).toBe(true);
    expect(order).toEqual(["a0", "a1", "a2", "a3", "b0"]);
    quiet.finish();
    await quiet.result;
    for (const op of flood) op.finish();
    await Promise.all(flood.map((o) => o.result));
    expect(share.figures.inFlight).toBe(0);
  });

  it("serves waiting tenants in turn when the gateway's slots are the bound", async () => {
    const share = new FairShare(clock, { total: 2, perTenant: 10, alone: 10 });
    const order: string[] = [];
    const ops = new Map<string, ReturnType<typeof start>>();
    for (const name of ["a0", "a1", "a2", "a3", "b0", "b1", "c0"]) {
      ops.set(name, start(share, name[0]!, order, name));
    }
    await settle();
    expect(order).toEqual(["a0", "a1"]);
    // Each freed slot goes to the next tenant in turn with waiting work: a, b, c, a, b.
    for (const name of ["a0", "a1", "a2", "b0", "c0", "a3", "b1"]) {
      ops.get(name)!.finish();
      await ops.get(name)!.result;
      await settle();
    }
    expect(order).toEqual(["a0", "a1", "a2", "b0", "c0", "a3", "b1"]);
    expect(share.figures).toEqual({ inFlight: 0, waiting: 0, tenants: 0 });
  });

  it("frees the slot of an operation that fails, and passes its error on", async () => {
    const share = new FairShare(clock, { total: 1, perTenant: 1, alone: 1 });
    const order: string[] = [];
    const failing = share.run("a", () => Promise.reject(new Error("store down")));
    const next = start(share, "b", order, "b0");
    await expect(failing).rejects.toThrow("store down");
    await settle();
    expect(next.started).toBe(true);
    next.finish();
    await next.result;
    expect(share.figures.inFlight).toBe(0);
  });

  it("lets a tenant alone have more in flight, and cuts it back once another tenant comes", async () => {
    let now = 0;
    const share = new FairShare(() => now, { total: 100, perTenant: 2, alone: 4 });
    const order: string[] = [];
    const a = Array.from({ length: 10 }, (_, i) => start(share, "a", order, `a${i}`));
    await settle();
    expect(order).toEqual(["a0", "a1", "a2", "a3"]);
    now += 10;
    const b = start(share, "b", order, "b0");
    expect(b.started).toBe(true);
    // A holds 4; while B is about, each of A's that ends starts another only below 2.
    for (const op of a.slice(0, 3)) op.finish();
    await Promise.all(a.slice(0, 3).map((o) => o.result));
    await settle();
    expect(order).toEqual(["a0", "a1", "a2", "a3", "b0", "a4"]);
    b.finish();
    await b.result;
    // A second after B's last operation began, A is alone again: a freed slot fills it up to 4.
    now += SHARED_MS + 1;
    a[3]!.finish();
    await a[3]!.result;
    await settle();
    expect(order).toEqual(["a0", "a1", "a2", "a3", "b0", "a4", "a5", "a6", "a7"]);
    for (const op of a) op.finish();
    await Promise.all(a.map((o) => o.result));
    expect(share.figures).toEqual({ inFlight: 0, waiting: 0, tenants: 0 });
  });

  it("lets a tenant with slow answers have one more than the busiest other, not queue behind itself", async () => {
    const share = new FairShare(clock, { total: 100, perTenant: 2, alone: 10 });
    const order: string[] = [];
    const b0 = start(share, "b", order, "b0");
    const a = Array.from({ length: 5 }, (_, i) => start(share, "a", order, `a${i}`));
    const timers = Array.from({ length: 5 }, (_, i) =>
      start(share, "timers a", order, `t${i}`, false),
    );
    await settle();
    // A (with B about, holding 1) gets 2; its timers one more than A, and raise no one's bound.
    expect(order).toEqual(["b0", "a0", "a1", "t0", "t1", "t2"]);
    const more = [1, 2, 3].map((i) => start(share, "b", order, `b${i}`));
    await settle();
    // B may have one more than A's 2; its fourth waits.
    expect(order).toEqual(["b0", "a0", "a1", "t0", "t1", "t2", "b1", "b2"]);
    for (const op of [b0, ...more, ...a, ...timers]) op.finish();
    await Promise.all([b0, ...more, ...a, ...timers].map((o) => o.result));
    expect(share.figures).toEqual({ inFlight: 0, waiting: 0, tenants: 0 });
  });

  it("refuses bounds below one, and a bound alone below the shared one", () => {
    expect(() => new FairShare(clock, { total: 0, perTenant: 1, alone: 1 })).toThrow(RangeError);
    expect(() => new FairShare(clock, { total: 1, perTenant: 0, alone: 0 })).toThrow(RangeError);
    expect(() => new FairShare(clock, { total: 9, perTenant: 4, alone: 2 })).toThrow(RangeError);
  });
});

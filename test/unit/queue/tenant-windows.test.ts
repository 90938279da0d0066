// The rate limit's one-second windows per tenant, on an injected clock.
import { describe, expect, it } from "vitest";
import { TenantWindows } from "../../../src/queue/admission/rates/tenant-windows.js";

describe("tenant windows", () => {
  it("counts a tenant's requests in its window, and starts a new one when it ends", () => {
    let now = 10_000;
    const w = new TenantWindows(10, () => now);
    expect(w.count("a", 1000)).toEqual({ current: 1, ttl: 1000 });
    now += 400;
    expect(w.count("a", 1000)).toEqual({ current: 2, ttl: 600 });
    expect(w.count("b", 1000).current).toBe(1);
    now += 600;
    expect(w.count("a", 1000)).toEqual({ current: 1, ttl: 1000 });
  });

  it("takes a batch's further parts up to what the window has left", () => {
    const w = new TenantWindows(10, () => 0);
    w.count("a", 1000);
    expect(w.take("a", 5, 4, 1000)).toBe(3);
    expect(w.take("a", 5, 4, 1000)).toBe(0);
  });

  it("admits requests within the window's limit, and refuses with what is left of it", () => {
    let now = 0;
    const w = new TenantWindows(10, () => now);
    expect(w.admit("a", 2, 1000)).toBeNull();
    expect(w.admit("a", 2, 1000)).toBeNull();
    now += 200;
    expect(w.admit("a", 2, 1000)).toBe(1); // 800 ms left: at least 1 s
    expect(w.admit("b", 2, 1000)).toBeNull();
    expect(new TenantWindows(10, () => 0).admit("a", 0, 3000)).toBe(3);
  });

  it("forgets the least recently used tenant past its bound", () => {
    const w = new TenantWindows(2, () => 0);
    w.count("a", 1000);
    w.count("b", 1000);
    w.count("c", 1000);
    expect(w.count("a", 1000).current).toBe(1);
  });
});

// Counts on one gateway (requests in flight, waiters, pushes): the cap holds for the namespace
// and for its tenant, all its deployments together.
import { describe, expect, it } from "vitest";
import { NamespaceCounts } from "../../../src/queue/admission/in-flight/namespace-counts.js";
import { makeNamespace } from "../../../src/queue/namespace.js";

const ns = (deployment: string | null, project = "prj") =>
  makeNamespace("team", project, "production", deployment).key;

describe("namespace counts", () => {
  it("refuses past the cap a tenant spread over deployments, until one is released", () => {
    const c = new NamespaceCounts(2);
    expect(c.take(ns("a"))).toBe(true);
    expect(c.take(ns("b"))).toBe(true);
    expect(c.take(ns("c"))).toBe(false);
    expect(c.take(ns(null))).toBe(false);
    expect(c.refused).toBe(2);
    expect(c.room(ns("c"))).toBe(0);
    expect(c.atCap).toBe(2);
    // Another tenant has its own.
    expect(c.take(ns("a", "other"))).toBe(true);
    c.release(ns("a"));
    expect(c.room(ns("c"))).toBe(1);
    expect(c.take(ns("c"))).toBe(true);
  });

  it("counts what must be done past the cap, and counts without a cap", () => {
    const c = new NamespaceCounts(1);
    c.add(ns("a"));
    c.add(ns("b"));
    expect(c.take(ns("a"))).toBe(false);
    c.release(ns("b"));
    c.release(ns("a"));
    expect(c.take(ns("b"))).toBe(true);
    const none = new NamespaceCounts(0);
    for (let i = 0; i < 5; i++) expect(none.take(ns("a"))).toBe(true);
    expect(none.count(ns("a"))).toBe(5);
    expect(none.room(ns("a"))).toBe(Infinity);
  });
});

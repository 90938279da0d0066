// The delayed-publish cap on an injected clock: per namespace, and per tenant all its
// deployments together, in one-second windows.
import { describe, expect, it } from "vitest";
import { DelayedPublishCap } from "../../../src/queue/admission/rates/delayed-publish-cap.js";
import { makeNamespace } from "../../../src/queue/namespace.js";

const ns = (deployment: string, project = "prj") =>
  makeNamespace("team", project, "production", deployment).key;

/** One gateway alone: its share is the whole budget. */
const alone = { note: () => undefined, share: (_key: string, limit: number) => limit };

describe("delayed-publish cap", () => {
  it("holds for a tenant's deployments together, and starts again each second", () => {
    let now = 5_000;
    const cap = new DelayedPublishCap(2, alone, () => now);
    cap.take(ns("a"));
    cap.take(ns("b"));
    expect(() => cap.take(ns("c"))).toThrow(/delayed/);
    cap.take(ns("a", "other"));
    now += 1000;
    cap.take(ns("c"));
  });
});

// Admission of topics, groups and settings documents per namespace (and then per tenant), on an
// in-memory usage port and an injected clock: a namespace's count under its cap is reused for a
// while with this gateway's admissions added, a refusal is decided on a fresh count, and the
// settings cap lets a replacement through.
import { describe, expect, it } from "vitest";
import {
  NAMESPACE_COUNT_REUSE_MS,
  StoreAdmission,
  type NamespaceCaps,
} from "../../../src/queue/admission/stored/store-admission.js";
import type { NamespaceUsagePort } from "../../../src/queue/admission/usage.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { refusal } from "../../helpers/refusal.js";

/** A store as the port shows it: topics and groups per namespace, changed by the test. */
class FakeCounts implements NamespaceUsagePort {
  readonly topics = new Map<string, number>();
  readonly groups = new Map<string, number>();
  reads = 0;
  async countTopics(key: string): Promise<number> {
    this.reads++;
    await Promise.resolve();
    return this.topics.get(key) ?? 0;
  }
  async countGroups(key: string): Promise<number> {
    this.reads++;
    await Promise.resolve();
    return this.groups.get(key) ?? 0;
  }
}

const ns = (deployment: string | null) =>
  makeNamespace("team", "prj", "production", deployment).key;

function setup(caps: Partial<NamespaceCaps> = {}) {
  let now = 5_000_000;
  const counts = new FakeCounts();
  const tenantAsked: string[] = [];
  const admission = new StoreAdmission(
    { topics: 0, groups: 0, settings: 0, ...caps },
    counts,
    {
      admitTopic: (k) => Promise.resolve(void tenantAsked.push(`topic ${k}`)),
      admitGroup: (k) => Promise.resolve(void tenantAsked.push(`group ${k}`)),
      admitSettings: (k) => Promise.resolve(void tenantAsked.push(`settings ${k}`)),
    },
    () => now,
  );
  return { admission, counts, tenantAsked, advance: (ms: number) => (now += ms) };
}

describe("store admission per namespace", () => {
  it("refuses a topic past the namespace's cap, then asks the tenant's only when admitted", async () => {
    const { admission, counts, tenantAsked } = setup({ topics: 2 });
    counts.topics.set(ns("a"), 2);
    const err = await refusal(admission.admitTopic(ns("a")));
    expect(err.code).toBe("topic_limit_reached");
    expect(err.status).toBe(403);
    expect(err.extra).toEqual({ limit: 2 });
    expect(tenantAsked).toEqual([]);
    // Another deployment is a namespace of its own (its tenant's cap is the tenant's business).
    await admission.admitTopic(ns("b"));
    expect(tenantAsked).toEqual([`topic ${ns("b")}`]);
  });

  it("reuses a count under the cap with its own admissions added, and reads again once old", async () => {
    const { admission, counts, advance } = setup({ groups: 3 });
    await admission.admitGroup(ns("a"));
    await admission.admitGroup(ns("a"));
    await admission.admitGroup(ns("a"));
    expect(counts.reads).toBe(1);
    // Three admitted: at the cap by its own count, so the fourth reads again (fresh count 0 in the
    // fake store, which the test did not fill): admitted on that read.
    await admission.admitGroup(ns("a"));
    expect(counts.reads).toBe(2);
    advance(NAMESPACE_COUNT_REUSE_MS);
    await admission.admitGroup(ns("a"));
    expect(counts.reads).toBe(3);
  });

  it("decides a refusal on a fresh count: room freed since is found", async () => {
    const { admission, counts } = setup({ topics: 1 });
    counts.topics.set(ns("a"), 1);
    expect((await refusal(admission.admitTopic(ns("a")))).code).toBe("topic_limit_reached");
    counts.topics.set(ns("a"), 0); // a topic was removed
    await admission.admitTopic(ns("a"));
  });

  it("lets a settings document past the cap through only as a replacement", async () => {
    const { admission, tenantAsked } = setup({ settings: 2 });
    await admission.admitSettings(ns("a"), 1, () => Promise.resolve(false));
    const err = await refusal(admission.admitSettings(ns("a"), 2, () => Promise.resolve(false)));
    expect(err.code).toBe("settings_limit_reached");
    await admission.admitSettings(ns("a"), 2, () => Promise.resolve(true));
    expect(tenantAsked).toEqual([`settings ${ns("a")}`, `settings ${ns("a")}`]);
  });

  it("reads nothing with no cap", async () => {
    const { admission, counts } = setup();
    await admission.admitTopic(ns("a"));
    await admission.admitGroup(ns("a"));
    expect(counts.reads).toBe(0);
  });
});

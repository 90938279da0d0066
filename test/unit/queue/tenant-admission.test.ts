// Admission per tenant, on an in-memory usage port and an injected clock: the caps hold for the
// tenant's deployments together, a new deployment past the bound is refused, counts under a cap
// are reused for a while, and a refusal is always decided on a fresh read.
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.js";
import {
  TENANT_BYTES_REFRESH_MS,
  TENANT_COUNT_REUSE_MS,
  TenantAdmission,
  type TenantCaps,
} from "../../../src/queue/admission/stored/tenant-admission.js";
import { tenantKey, tenantKeyOf } from "../../../src/queue/admission/tenant.js";
import type { TenantUsage, UsagePort } from "../../../src/queue/admission/usage.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import { refusal } from "../../helpers/refusal.js";

/** A store as the port shows it: what each tenant holds, changed by the test. */
class FakeUsage implements UsagePort {
  readonly held = new Map<string, TenantUsage>();
  reads = 0;
  /** Stores one more of `kind` in the namespace (what an admitted creation does). */
  add(namespaceKey: string, kind: "topics" | "groups" | "settings"): void {
    const t = tenantKeyOf(namespaceKey);
    const u = this.held.get(t) ?? {
      topics: 0,
      groups: 0,
      bytes: 0,
      settings: 0,
      deployments: new Set<string>(),
    };
    this.held.set(t, {
      ...u,
      [kind]: u[kind] + 1,
      deployments: new Set([...u.deployments, namespaceKey]),
    });
  }
  async readTenant(tenant: string): Promise<TenantUsage> {
    this.reads++;
    await Promise.resolve();
    return (
      this.held.get(tenant) ?? {
        topics: 0,
        groups: 0,
        bytes: 0,
        settings: 0,
        deployments: new Set(),
      }
    );
  }
}

const ns = (deployment: string | null, project = "prj") =>
  makeNamespace("team", project, "production", deployment).key;

function setup(caps: Partial<TenantCaps> = {}) {
  let now = 1_000_000;
  const usage = new FakeUsage();
  const admission = new TenantAdmission(
    { topics: 0, groups: 0, settings: 0, deployments: 0, bytes: () => 0, ...caps },
    usage,
    () => now,
  );
  /** Creations as the gateway makes them: admitted, then stored. */
  const topic = async (nsKey: string) => {
    await admission.admitTopic(nsKey);
    usage.add(nsKey, "topics");
  };
  const settings = async (nsKey: string, replaces: () => Promise<boolean>) => {
    await admission.admitSettings(nsKey, replaces);
    usage.add(nsKey, "settings");
  };
  return { usage, admission, topic, settings, advance: (ms: number) => (now += ms) };
}

describe("tenant keys", () => {
  it("are the namespace key without its deployment", () => {
    const t = tenantKey({ team: "team", project: "prj", environment: "production" });
    expect(tenantKeyOf(ns("a"))).toBe(t);
    expect(tenantKeyOf(ns(null))).toBe(t);
    expect(tenantKeyOf(ns("a", "other"))).not.toBe(t);
  });
});

describe("tenant admission", () => {
  it("holds the topic cap for the tenant's deployments together", async () => {
    const { admission, topic } = setup({ topics: 3 });
    await topic(ns("a"));
    await topic(ns("b"));
    await topic(ns("c"));
    const err = await refusal(admission.admitTopic(ns("d")));
    expect(err.code).toBe("topic_limit_reached");
    expect(err.extra).toEqual({ limit: 3, scope: "tenant" });
    // Another tenant has its own.
    await admission.admitTopic(ns("a", "other"));
  });

  it("reuses a count under the cap, and reads again once it is old", async () => {
    const { admission, usage, advance } = setup({ topics: 100 });
    await admission.admitTopic(ns("a"));
    await admission.admitTopic(ns("a"));
    await admission.admitGroup(ns("a"));
    expect(usage.reads).toBe(1);
    advance(TENANT_COUNT_REUSE_MS);
    await admission.admitTopic(ns("a"));
    expect(usage.reads).toBe(2);
  });

  it("decides a refusal on a fresh read: room freed since is found", async () => {
    const { admission, usage } = setup({ topics: 2 });
    const t = tenantKeyOf(ns("a"));
    await admission.admitTopic(ns("a"));
    await admission.admitTopic(ns("a"));
    // The store now shows one topic gone (swept, or deleted through another gateway).
    usage.held.set(t, { topics: 1, groups: 0, bytes: 0, settings: 0, deployments: new Set() });
    const reads = usage.reads;
    await admission.admitTopic(ns("a"));
    expect(usage.reads).toBe(reads + 1);
  });

  it("bounds the live deployments: a new one is refused with Retry-After, known ones go on", async () => {
    const { admission, topic } = setup({ deployments: 2, topics: 100 });
    await topic(ns("a"));
    await topic(ns("b"));
    const err = await refusal(admission.admitTopic(ns("c")));
    expect(err.code).toBe("deployment_limit_reached");
    expect(err.status).toBe(429);
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
    const settingsErr = await refusal(
      admission.admitSettings(ns("c"), () => Promise.resolve(false)),
    );
    expect(settingsErr.code).toBe("deployment_limit_reached");
    await admission.admitTopic(ns("a"));
    await admission.admitGroup(ns("b"));
  });

  it("counts deployments the store shows (settings only too), and frees one that is gone", async () => {
    const { admission, usage, advance } = setup({ deployments: 1 });
    const t = tenantKeyOf(ns("a"));
    usage.held.set(t, {
      topics: 0,
      groups: 0,
      bytes: 0,
      settings: 1,
      deployments: new Set([ns("a")]),
    });
    expect((await refusal(admission.admitTopic(ns("b")))).code).toBe("deployment_limit_reached");
    usage.held.delete(t);
    advance(1);
    await admission.admitTopic(ns("b"));
  });

  it("lets a settings replacement through at the cap, and nothing new", async () => {
    const { admission, settings } = setup({ settings: 1 });
    await settings(ns("a"), () => Promise.resolve(false));
    await admission.admitSettings(ns("b"), () => Promise.resolve(true));
    const err = await refusal(admission.admitSettings(ns("b"), () => Promise.resolve(false)));
    expect(err.code).toBe("settings_limit_reached");
  });

  it("holds the byte cap for the deployments together, on what is known", async () => {
    const { admission, usage, advance } = setup({ bytes: () => 1000 });
    // The first publish of a tenant waits for its usage; later ones are checked at once.
    await admission.admitBytes(ns("a"), 400);
    admission.stored(ns("a"), 400);
    expect(admission.admitBytes(ns("b"), 400)).toBeUndefined();
    admission.stored(ns("b"), 400);
    const err = await refusal(Promise.resolve().then(() => admission.admitBytes(ns("c"), 400)));
    expect(err.code).toBe("storage_quota_exceeded");
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
    expect(err.extra).toMatchObject({ limitBytes: 1000, usedBytes: 800, scope: "tenant" });
    // Messages expired: a read after the refresh time finds the room.
    expect(usage.reads).toBe(1);
    advance(TENANT_BYTES_REFRESH_MS + 1);
    expect(() => admission.admitBytes(ns("c"), 400)).toThrow(AppError);
    await Promise.resolve();
    await Promise.resolve();
    expect(usage.reads).toBe(2);
    expect(admission.admitBytes(ns("c"), 400)).toBeUndefined();
  });

  it("shares one read among the tenant's concurrent admissions", async () => {
    const { admission, usage } = setup({ topics: 100 });
    await Promise.all([1, 2, 3, 4].map((i) => admission.admitTopic(ns(`d${i}`))));
    expect(usage.reads).toBe(1);
  });

  it("reads nothing when no cap applies", async () => {
    const { admission, usage } = setup();
    await admission.admitTopic(ns("a"));
    await admission.admitGroup(ns("b"));
    expect(admission.admitBytes(ns("c"), 1_000_000)).toBeUndefined();
    expect(usage.reads).toBe(0);
  });
});

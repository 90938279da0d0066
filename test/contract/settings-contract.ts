// One contract for the SettingsStore port, run against the in-memory implementation
// (memory.test.ts) and the KV bucket on a real nats-server (jetstream.test.ts).
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { makeNamespace } from "../../src/queue/namespace.js";
import type { ConsumerSettings } from "../../src/queue/settings/consumer-settings.js";
import type { SettingsEntry, SettingsStore } from "../../src/queue/settings/settings-store.js";

const polled = (maxDeliveries: number): ConsumerSettings => ({
  push: null,
  retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
  deadLetter: { topic: "dead", maxDeliveries },
  flowControl: null,
});

export function settingsContract(name: string, store: () => SettingsStore): void {
  describe(`settings store contract: ${name}`, () => {
    // A namespace of its own per test: the store is shared by the file's tests.
    const namespace = () =>
      makeNamespace("contract-team", randomBytes(4).toString("hex"), "production", null);

    it("stores, reads, replaces and removes a document", async () => {
      const s = store();
      const ns = namespace();
      expect(await s.get(ns, "orders", "g")).toBeNull();
      const first = await s.put(ns, "orders", "g", polled(3));
      expect(first).toMatchObject({ topic: "orders", group: "g", settings: polled(3) });
      expect(Number.isNaN(Date.parse(first.updatedAt))).toBe(false);
      expect(await s.get(ns, "orders", "g")).toMatchObject({ settings: polled(3) });
      const second = await s.put(ns, "orders", "g", polled(5));
      expect(second.revision).toBeGreaterThan(first.revision);
      expect((await s.get(ns, "orders", "g"))!.settings).toEqual(polled(5));
      expect(s.count(ns)).toBe(1);
      expect(await s.delete(ns, "orders", "g")).toBe(true);
      expect(await s.delete(ns, "orders", "g")).toBe(false);
      expect(await s.get(ns, "orders", "g")).toBeNull();
      expect(s.count(ns)).toBe(0);
    });

    it("applies a topic's own document, else the longest matching pattern", async () => {
      const s = store();
      const ns = namespace();
      await s.put(ns, "orders_*", "g", polled(1));
      await s.put(ns, "orders_eu_*", "g", polled(2));
      await s.put(ns, "orders_eu_west", "g", polled(3));
      expect(s.effective(ns, "orders_us", "g")).toEqual(polled(1));
      expect(s.effective(ns, "orders_eu_north", "g")).toEqual(polled(2));
      expect(s.effective(ns, "orders_eu_west", "g")).toEqual(polled(3));
      expect(s.effectiveEntry(ns, "orders_eu_north", "g")!.topic).toBe("orders_eu_*");
      expect(s.effective(ns, "orders", "g")).toBeNull();
      expect(s.effective(ns, "orders_us", "other")).toBeNull();
      expect(s.list(ns).map((e) => e.topic)).toEqual(["orders_*", "orders_eu_*", "orders_eu_west"]);
      // Another namespace sees none of it.
      expect(s.effective(namespace(), "orders_us", "g")).toBeNull();
    });

    it("tells listeners of its own changes", async () => {
      const s = store();
      const ns = namespace();
      const heard: [string, boolean][] = [];
      const stop = s.onChange((e: SettingsEntry, deleted) => {
        if (e.namespace.key === ns.key) heard.push([e.topic, deleted]);
      });
      await s.put(ns, "orders", "g", polled(3));
      await s.delete(ns, "orders", "g");
      stop();
      await s.put(ns, "orders", "g", polled(4));
      expect(heard).toEqual([
        ["orders", false],
        ["orders", true],
      ]);
      expect([...s.entries()].some((e) => e.namespace.key === ns.key)).toBe(true);
    });
  });
}

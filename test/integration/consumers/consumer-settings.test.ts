// The consumer settings resource across two gateways: what one stores, the other reads at once
// (GET reads the store) and holds in memory within seconds (list, effective); patterns and
// precedence; namespaces; a gateway that starts later; bad input changing nothing; push off in
// production; the per-namespace cap.
import { describe, expect, it } from "vitest";
import { makeNamespace } from "../../../src/queue/namespace.js";
import type { SettingsEntry } from "../../../src/queue/settings/consumer-settings.js";
import { useGateways } from "../../helpers/fixture.js";
import { startGateway } from "../../helpers/gateway.js";
import { api, errorCode, uniqueName } from "../../helpers/http.js";
import { TEAM_A } from "../../helpers/issuer.js";
import { eventually, settingsApi } from "../../helpers/settings.js";

const f = useGateways(2);
const ns = makeNamespace(
  TEAM_A.owner_id as string,
  TEAM_A.project_id as string,
  TEAM_A.environment as string,
  null,
);
const gateway = (i: number) => f.gateways[i]!.gateway;
const client = async (i: number, extra: Record<string, string> = {}) =>
  settingsApi(f.gateways[i]!.url, await f.issuer.token(), extra);

const full = {
  push: {
    url: "http://localhost:3000/api/queue",
    maxConcurrency: 5,
    timeoutSeconds: 30,
    autoAck: true,
  },
  retry: { afterSeconds: 10, initialDelaySeconds: 2, maxBackoffSeconds: 600 },
  deadLetter: { topic: "orders-dead", maxDeliveries: 3 },
  flowControl: null,
};

const afterSeconds = (i: number, topic: string, group: string) =>
  gateway(i).settings.effective(ns, topic, group)?.retry.afterSeconds ?? null;

describe("consumer settings", () => {
  it("stores on one gateway, reads back on both, and spreads to the other's memory", async () => {
    const [a, b] = [await client(0), await client(1)];
    const topic = uniqueName("orders");
    const heard: [string, boolean][] = [];
    const stop = gateway(1).settings.onChange((e, deleted) => heard.push([e.topic, deleted]));

    const put = await a.put(topic, "billing", full);
    expect(put.status).toBe(200);
    const stored = (await put.json()) as Record<string, unknown>;
    expect(stored).toEqual({
      topic,
      consumerGroup: "billing",
      ...full,
      updatedAt: expect.any(String) as unknown,
    });
    expect(Date.parse(stored.updatedAt as string)).toBeGreaterThan(Date.now() - 60_000);
    // Read-your-writes on A, a current read on B.
    expect(await (await a.get(topic, "billing")).json()).toEqual(stored);
    expect(await (await b.get(topic, "billing")).json()).toEqual(stored);
    expect(gateway(0).settings.effective(ns, topic, "billing")).toEqual(full);
    // B's memory follows within seconds.
    expect(await eventually(() => afterSeconds(1, topic, "billing") === 10)).toBe(true);
    expect(gateway(1).settings.effective(ns, topic, "billing")).toEqual(full);
    expect((await b.list()).filter((s) => s.topic === topic)).toEqual([stored]);
    expect(heard).toContainEqual([topic, false]);
    stop();

    // Defaults are filled in, and a PUT replaces the whole document.
    const minimal = await a.put(topic, "billing", {});
    expect(minimal.status).toBe(200);
    expect(await minimal.json()).toMatchObject({
      push: null,
      retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: null,
    });
    expect(await eventually(() => afterSeconds(1, topic, "billing") === 60)).toBe(true);
  });

  it("deletes on one gateway and is gone on the other within seconds; a second delete is 404", async () => {
    const [a, b] = [await client(0), await client(1)];
    const topic = uniqueName("gone");
    expect((await a.put(topic, "g", { retry: { afterSeconds: 7 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(1, topic, "g") === 7)).toBe(true);

    const del = await b.delete(topic, "g");
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    expect(afterSeconds(1, topic, "g")).toBeNull();
    const get = await a.get(topic, "g");
    expect(get.status).toBe(404);
    expect(await errorCode(get)).toBe("settings_not_found");
    expect(await eventually(() => afterSeconds(0, topic, "g") === null)).toBe(true);
    expect((await a.list()).some((s) => s.topic === topic)).toBe(false);
    const again = await a.delete(topic, "g");
    expect(again.status).toBe(404);
    expect(await errorCode(again)).toBe("settings_not_found");
  });

  it("applies a pattern to topics made after it, own settings first, then the longest prefix", async () => {
    const [a, b] = [await client(0), await client(1)];
    const p = uniqueName("evt").replace("-", "_");
    const q = api(f.gateways[0]!.url, await f.issuer.token());
    expect((await a.put(`${p}_*`, "g", { retry: { afterSeconds: 1 } })).status).toBe(200);
    expect((await a.put(`${p}_step_*`, "g", { retry: { afterSeconds: 2 } })).status).toBe(200);
    expect((await b.put(`${p}_step_9`, "g", { retry: { afterSeconds: 3 } })).status).toBe(200);
    // The topics come to exist only now.
    for (const t of [`${p}_a`, `${p}_step_1`, `${p}_step_9`]) {
      expect((await q.publish(t, "x")).status).toBe(201);
    }
    for (const i of [0, 1]) {
      expect(await eventually(() => afterSeconds(i, `${p}_step_9`, "g") === 3)).toBe(true);
      expect(afterSeconds(i, `${p}_a`, "g")).toBe(1);
      expect(afterSeconds(i, `${p}_`, "g")).toBe(1);
      expect(afterSeconds(i, `${p}_step_1`, "g")).toBe(2);
      expect(afterSeconds(i, `${p}_step_`, "g")).toBe(2);
      expect(afterSeconds(i, p, "g")).toBeNull();
      expect(afterSeconds(i, `${p}_a`, "other")).toBeNull();
      expect(gateway(i).settings.effectiveEntry(ns, `${p}_step_1`, "g")?.topic).toBe(`${p}_step_*`);
    }
    // A pattern's document is read and removed by the pattern itself.
    const got = (await (await b.get(`${p}_*`, "g")).json()) as Record<string, unknown>;
    expect(got).toMatchObject({ topic: `${p}_*`, consumerGroup: "g" });
    expect((await b.get(`${p}_a`, "g")).status).toBe(404);
    expect((await b.delete(`${p}_step_*`, "g")).status).toBe(204);
    expect(await eventually(() => afterSeconds(0, `${p}_step_1`, "g") === 1)).toBe(true);
    const listed = (await a.list()).filter((s) => String(s.topic).startsWith(p));
    expect(listed.map((s) => s.topic)).toEqual([`${p}_*`, `${p}_step_9`]);
    // The gateway's walk over every namespace sees them too.
    const all: SettingsEntry[] = [...gateway(1).settings.entries()];
    expect(
      all
        .filter((e) => e.topic.startsWith(p))
        .map((e) => e.topic)
        .sort(),
    ).toEqual([`${p}_*`, `${p}_step_9`]);
  });

  it("keeps namespaces apart: another tenant or deployment sees nothing and changes nothing", async () => {
    const a = await client(0);
    const topic = uniqueName("iso");
    expect((await a.put(topic, "g", { retry: { afterSeconds: 11 } })).status).toBe(200);
    const others = [
      settingsApi(f.gateways[1]!.url, await f.issuer.token({ owner_id: "team_other" })),
      settingsApi(f.gateways[1]!.url, await f.issuer.token({ project_id: "prj_other" })),
      await client(1, { "vqs-deployment-id": "dpl_1" }),
    ];
    for (const o of others) {
      expect((await o.get(topic, "g")).status).toBe(404);
      expect((await o.delete(topic, "g")).status).toBe(404);
      expect((await o.list()).some((s) => s.topic === topic)).toBe(false);
    }
    const dep = others[2]!;
    expect((await dep.put(topic, "g", { retry: { afterSeconds: 22 } })).status).toBe(200);
    expect(await eventually(() => afterSeconds(1, topic, "g") === 11)).toBe(true);
    const depNs = makeNamespace(ns.team, ns.project, ns.environment, "dpl_1");
    expect(gateway(1).settings.effective(depNs, topic, "g")?.retry.afterSeconds).toBe(22);
    expect(await (await a.get(topic, "g")).json()).toMatchObject({
      retry: { afterSeconds: 11 },
    });
    expect((await dep.list()).map((s) => s.topic)).toEqual([topic]);
  });

  it("is known to a gateway that starts after it was stored", async () => {
    const topic = uniqueName("late");
    expect((await (await client(0)).put(topic, "g", { retry: { afterSeconds: 33 } })).status).toBe(
      200,
    );
    const late = await startGateway(f.nats.url, f.issuer);
    try {
      // No polling: a gateway reads every document before it serves.
      expect(late.gateway.settings.effective(ns, topic, "g")?.retry.afterSeconds).toBe(33);
      const listed = await settingsApi(late.url, await f.issuer.token()).list();
      expect(listed.some((s) => s.topic === topic)).toBe(true);
    } finally {
      await late.close();
    }
  });

  it("answers bad bodies, patterns and URLs with their 4xx code and keeps the stored document", async () => {
    const a = await client(0);
    const topic = uniqueName("bad");
    const put = await a.put(topic, "g", full);
    expect(put.status).toBe(200);
    const stored = await put.json();
    const cases: [string, string, unknown, number, string][] = [
      [topic, "g", "{not json", 400, "invalid_request_body"],
      [topic, "g", "", 400, "invalid_request_body"],
      [topic, "g", "[]", 400, "invalid_settings"],
      [topic, "g", "null", 400, "invalid_settings"],
      [topic, "g", { retry: { afterSeconds: 86401 } }, 400, "invalid_settings"],
      [
        topic,
        "g",
        { retry: { afterSeconds: 100, maxBackoffSeconds: 50 } },
        400,
        "invalid_settings",
      ],
      [topic, "g", { push: { url: "http://localhost", extra: 1 } }, 400, "invalid_settings"],
      [topic, "g", { deadLetter: { topic, maxDeliveries: 1 } }, 400, "invalid_settings"],
      [topic, "g", { push: { url: "http://user:pw@localhost/" } }, 400, "invalid_settings"],
      [topic, "g", { push: { url: "file:///etc/passwd" } }, 400, "invalid_settings"],
      [
        topic,
        "g",
        { push: { url: "http://localhost.evil.com/" } },
        403,
        "push_destination_not_allowed",
      ],
      [
        topic,
        "g",
        { push: { url: "http://127.0.0.1.nip.io/" } },
        403,
        "push_destination_not_allowed",
      ],
      [topic, "g", { push: { url: "http://[::1]:3000/" } }, 403, "push_destination_not_allowed"],
      [topic, "g", { push: { url: "https://localhost/" } }, 403, "push_destination_not_allowed"],
      [`${topic}**`, "g", {}, 400, "invalid_topic_pattern"],
      [`*${topic}`, "g", {}, 400, "invalid_topic_pattern"],
      [`${topic.slice(0, 3)}*${topic.slice(3)}`, "g", {}, 400, "invalid_topic_pattern"],
      ["*", "g", {}, 400, "invalid_topic_pattern"],
      [`${topic}.x`, "g", {}, 400, "invalid_topic_name"],
      [topic, "g*", {}, 400, "invalid_consumer_group_name"],
      [topic, "g.h", {}, 400, "invalid_consumer_group_name"],
      [topic, "g", "x".repeat(20_000), 413, "payload_too_large"],
    ];
    const failures: string[] = [];
    for (const [t, g, body, status, code] of cases) {
      const res = await a.put(t, g, body);
      const got = await errorCode(res);
      if (res.status !== status || got !== code) {
        failures.push(`${t} ${g} ${JSON.stringify(body).slice(0, 60)}: ${res.status} ${got}`);
      }
    }
    for (const [t, g, code] of [
      ["*", "g", "invalid_topic_pattern"],
      [`${topic}*x`, "g", "invalid_topic_pattern"],
      [topic, "g*", "invalid_consumer_group_name"],
    ] as const) {
      for (const res of [await a.get(t, g), await a.delete(t, g)]) {
        const got = await errorCode(res);
        if (res.status !== 400 || got !== code) failures.push(`GET/DELETE ${t} ${g}: ${got}`);
      }
    }
    expect(failures).toEqual([]);
    expect(await (await a.get(topic, "g")).json()).toEqual(stored);
    expect(gateway(0).settings.effective(ns, topic, "g")).toEqual(full);
  });

  it("needs a token and answers 401 without one", async () => {
    const res = await fetch(`${f.gateways[0]!.url}/api/v3/settings`);
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe("missing_token");
  });

  it("refuses push in production until the operator allows destinations, and takes the rest", async () => {
    const prod = await startGateway(f.nats.url, f.issuer, { env: { NODE_ENV: "production" } });
    try {
      const p = settingsApi(prod.url, await f.issuer.token());
      const topic = uniqueName("prod");
      const refused = await p.put(topic, "g", { push: { url: "http://localhost:3000/" } });
      expect(refused.status).toBe(403);
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("push_destination_not_allowed");
      expect(body.error.message).toMatch(/operator must set VQS_PUSH_ALLOWED_URLS/);
      expect((await p.get(topic, "g")).status).toBe(404);
      const polled = await p.put(topic, "g", { retry: full.retry, deadLetter: full.deadLetter });
      expect(polled.status).toBe(200);
    } finally {
      await prod.close();
    }
    const allowed = await startGateway(f.nats.url, f.issuer, {
      env: { NODE_ENV: "production", VQS_PUSH_ALLOWED_URLS: "https://hooks.example.com/vqs" },
    });
    try {
      const p = settingsApi(allowed.url, await f.issuer.token());
      const topic = uniqueName("prod");
      const ok = await p.put(topic, "g", { push: { url: "https://hooks.example.com/vqs/in" } });
      expect(ok.status).toBe(200);
      const localhost = await p.put(topic, "g", { push: { url: "http://localhost:3000/" } });
      expect(localhost.status).toBe(403);
    } finally {
      await allowed.close();
    }
  });

  it("caps the documents of a namespace, still letting existing ones be replaced", async () => {
    const capped = await startGateway(f.nats.url, f.issuer, {
      config: { maxSettingsPerNamespace: 2 },
    });
    try {
      const c = settingsApi(capped.url, await f.issuer.token({ owner_id: uniqueName("team") }));
      expect((await c.put("t1", "g", {})).status).toBe(200);
      expect((await c.put("t2*", "g", {})).status).toBe(200);
      const third = await c.put("t3", "g", {});
      expect(third.status).toBe(403);
      expect(await errorCode(third)).toBe("settings_limit_reached");
      expect((await c.put("t1", "g", { retry: { afterSeconds: 1 } })).status).toBe(200);
      expect((await c.delete("t2*", "g")).status).toBe(204);
      expect((await c.put("t3", "g", {})).status).toBe(200);
    } finally {
      await capped.close();
    }
  });
});

// The pure parts of `vqs triggers sync`: consumer group names (held equal to the client's own
// function), routes of every router style, --route and --app-url parsing, vercel.json reading,
// the merge into a stored document, and which documents --prune takes.
import { QueueClient } from "@vercel/queue";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SettingsDocument } from "../../../src/cli/api-client.js";
import { readBuildOutput } from "../../../src/cli/triggers/build-output.js";
import { filePathToConsumerGroup } from "../../../src/cli/triggers/consumer-group.js";
import {
  diff,
  entryKey,
  mergeTrigger,
  pruneCandidates,
  pruneDocument,
  type DeclaredEntry,
} from "../../../src/cli/triggers/plan.js";
import {
  deriveRoute,
  parseAppUrl,
  parseRouteOverride,
  pushUrl,
} from "../../../src/cli/triggers/routes.js";
import { planEntries } from "../../../src/cli/triggers/sync.js";
import { parseVercelJson } from "../../../src/cli/triggers/vercel-json.js";
import { UsageError } from "../../../src/cli/errors.js";
import { AppError } from "../../../src/errors.js";
import { validateSettings } from "../../../src/queue/settings/validate.js";

// @vercel/queue 0.6.0 exposes its unexported filePathToConsumerGroup on globalThis when it is
// loaded under vitest (NODE_ENV=test or VITEST): the client's own code, not a copy.
void QueueClient;
const clientGroupName = (globalThis as { __filePathToConsumerGroup?: (p: string) => string })
  .__filePathToConsumerGroup;

describe("consumer group names", () => {
  const cases: [string, string][] = [
    ["app/api/orders/route.ts", "app_Sapi_Sorders_Sroute_Dts"],
    ["api/my_queue.ts", "api_Smy__queue_Dts"],
    ["src/app/(shop)/api/[id]/route.ts", "src_Sapp_S_28shop_29_Sapi_S_5Bid_5D_Sroute_Dts"],
    ["pages/api/a b.ts", "pages_Sapi_Sa_20b_Dts"],
    ["api/é.ts", "api_S_E9_Dts"],
    ["api/中.ts", "api_S_4E2D_Dts"],
    // Outside the BMP the client keeps only the high surrogate.
    ["api/😀.ts", "api_S_D83D_Dts"],
    ["api/x-y~z.ts", "api_Sx-y_7Ez_Dts"],
    ["api/\t.ts", "api_S_09_Dts"],
    ["", ""],
  ];

  it("are what the examples say", () => {
    for (const [path, name] of cases) expect(filePathToConsumerGroup(path), path).toBe(name);
  });

  it("equal the client's own function on edge characters and random paths", () => {
    expect(clientGroupName, "the client no longer exposes its function under vitest").toBeTypeOf(
      "function",
    );
    const paths = cases.map(([p]) => p);
    const alphabet = [
      ..."_/.-()[]{}@*?!~ %#=+,;:'\"\\aZ09",
      "é",
      "ß",
      "中",
      "😀",
      "\u0000",
      "\u200d",
    ];
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2000; i++) {
      let p = "";
      const n = 1 + Math.floor(random() * 24);
      for (let j = 0; j < n; j++) {
        p +=
          random() < 0.8
            ? alphabet[Math.floor(random() * alphabet.length)]
            : String.fromCodePoint(Math.floor(random() * 0x10ffff) & ~0x800); // no lone surrogates
      }
      paths.push(p);
    }
    for (const p of paths)
      expect(filePathToConsumerGroup(p), JSON.stringify(p)).toBe(clientGroupName!(p));
  });

  it("only ever hold the characters a group name allows", () => {
    expect(filePathToConsumerGroup("src/app/(x)/[...slug]/route.ts")).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});

describe("routes", () => {
  const route = (file: string) => {
    const r = deriveRoute(file);
    return r.ok ? r.route : null;
  };

  it("app router: the route file's directory, groups and slots dropped, dynamic kept", () => {
    expect(route("app/api/orders/route.ts")).toBe("/api/orders");
    expect(route("app/api/orders/route.js")).toBe("/api/orders");
    expect(route("app/api/orders/route.mjs")).toBe("/api/orders");
    expect(route("app/api/orders/route.tsx")).toBe("/api/orders");
    expect(route("app/route.ts")).toBe("/");
    expect(route("app/(shop)/api/(v1)/orders/route.ts")).toBe("/api/orders");
    expect(route("app/@modal/api/x/route.ts")).toBe("/api/x");
    expect(route("app/api/orders/[id]/route.ts")).toBe("/api/orders/[id]");
    expect(route("app/api/[...slug]/route.ts")).toBe("/api/[...slug]");
  });

  it("pages router: pages/api only, extension dropped, index is its directory", () => {
    expect(route("pages/api/orders.ts")).toBe("/api/orders");
    expect(route("pages/api/orders/index.ts")).toBe("/api/orders");
    expect(route("pages/api/index.js")).toBe("/api");
    expect(route("pages/api/orders/[id].ts")).toBe("/api/orders/[id]");
    expect(route("pages/api/v1/queue.mts")).toBe("/api/v1/queue");
  });

  it("plain api/ (Vercel Functions, any language): extension dropped, index is its directory", () => {
    expect(route("api/queue.ts")).toBe("/api/queue");
    expect(route("api/queue/index.js")).toBe("/api/queue");
    expect(route("api/index.ts")).toBe("/api");
    expect(route("api/jobs/handler.py")).toBe("/api/jobs/handler");
    expect(route("./api/queue.ts")).toBe("/api/queue");
  });

  it("src/ before app/ and pages/ is stripped", () => {
    expect(route("src/app/api/orders/route.ts")).toBe("/api/orders");
    expect(route("src/app/(shop)/api/x/route.ts")).toBe("/api/x");
    expect(route("src/pages/api/orders.ts")).toBe("/api/orders");
    expect(route("src/pages/api/orders/index.ts")).toBe("/api/orders");
  });

  it("refuses what is not one routable file, saying to pass --route", () => {
    for (const file of [
      "api/*.ts",
      "app/**/route.ts",
      "api/{a,b}.ts",
      "lib/queue.ts",
      "src/api/queue.ts", // not a Vercel Functions directory
      "app/page.tsx",
      "app/api/_lib/route.ts", // private folder
      "pages/orders.tsx", // a page, not an API route
      "api/_helpers/x.ts", // Vercel serves nothing under _
      "api/.hidden.ts",
      "api/noextension",
      "api/../x.ts",
      "api\\x.ts",
      "/abs/api/x.ts",
    ]) {
      const r = deriveRoute(file);
      expect(r.ok, file).toBe(false);
      if (!r.ok) {
        expect(r.reason).toContain(`"${file}"`);
        expect(r.reason).toContain("--route");
      }
    }
  });

  it("agree with the client's own URL paths where the client derives one", () => {
    const clientUrlPath = (globalThis as { __filePathToUrlPath?: (p: string) => string })
      .__filePathToUrlPath!;
    for (const file of [
      "app/api/orders/route.ts",
      "src/app/api/orders/route.ts",
      "pages/api/orders.ts",
      "src/pages/api/orders.ts",
      "app/api/orders/[id]/route.ts",
    ]) {
      expect(route(file), file).toBe(clientUrlPath(file));
    }
  });
});

describe("--route, --app-url and the push URL", () => {
  it("splits <file>=<path> at the first '=' before a path or URL", () => {
    expect(parseRouteOverride("api/*.ts=/api/queue")).toEqual({
      file: "api/*.ts",
      route: "/api/queue",
    });
    expect(parseRouteOverride("a=b.ts=/x")).toEqual({ file: "a=b.ts", route: "/x" });
    expect(parseRouteOverride("lib/q.ts=https://other.svc/q")).toEqual({
      file: "lib/q.ts",
      route: "https://other.svc/q",
    });
    expect(parseRouteOverride("lib/q.ts")).toBeTypeOf("string");
    expect(parseRouteOverride("lib/q.ts=api/x")).toBeTypeOf("string");
    expect(parseRouteOverride("=/x")).toBeTypeOf("string");
  });

  it("takes http(s) app URLs only, without user, query or fragment", () => {
    expect(parseAppUrl("http://localhost:3000")).toBeInstanceOf(URL);
    expect(parseAppUrl("https://app.example.com/base/")).toBeInstanceOf(URL);
    for (const bad of [
      "localhost:3000",
      "ftp://x",
      "http://u:p@x",
      "http://x/?a=1",
      "http://x/#f",
      "/api",
    ]) {
      expect(parseAppUrl(bad), bad).toBeTypeOf("string");
    }
  });

  it("joins the route under the app URL's path, normalized as the gateway stores it", () => {
    const app = (s: string) => parseAppUrl(s) as URL;
    expect(pushUrl(app("http://localhost:3000"), "/api/x")).toBe("http://localhost:3000/api/x");
    expect(pushUrl(app("http://localhost:3000/"), "/api/x")).toBe("http://localhost:3000/api/x");
    expect(pushUrl(app("HTTP://App.Local:80/base/"), "/api/x")).toBe("http://app.local/base/api/x");
    expect(pushUrl(app("http://h"), "/api/a b")).toBe("http://h/api/a%20b");
    expect(pushUrl(app("http://h"), "/api/[id]")).toBe("http://h/api/[id]");
    expect(pushUrl(app("http://h"), "/")).toBe("http://h/");
    expect(pushUrl(app("http://h"), "https://other/q")).toBe("https://other/q");
  });
});

describe("vercel.json", () => {
  it("reads queue/v2beta triggers and their numbers; skips other triggers", () => {
    const { triggers, warnings } = parseVercelJson(
      JSON.stringify({
        functions: {
          "app/api/a/route.ts": {
            maxDuration: 60,
            experimentalTriggers: [
              { type: "queue/v2beta", topic: "a", retryAfterSeconds: 5, maxConcurrency: 2 },
              { type: "queue/v2beta", topic: "b_*", initialDelaySeconds: 3, consumer: "x" },
              { type: "queue/v1beta", topic: "old" },
              { type: "cron/v1", schedule: "* * * * *" },
            ],
          },
          "api/plain.ts": { memory: 1024 },
        },
      }),
      "vercel.json",
    );
    expect(triggers).toEqual([
      { file: "app/api/a/route.ts", topic: "a", retryAfterSeconds: 5, maxConcurrency: 2 },
      { file: "app/api/a/route.ts", topic: "b_*", initialDelaySeconds: 3, consumer: "x" },
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings.join("\n")).toContain("queue/v1beta");
  });

  it("names a trigger's group after its consumer, else after its file", () => {
    const entries = planEntries(
      [
        { file: "app/api/a/route.ts", topic: "a", consumer: "billing" },
        { file: "app/api/a/route.ts", topic: "b" },
        { file: "functions/x.func", topic: "c_*", route: "/x", consumer: "default" },
      ],
      new URL("http://h"),
      [],
    );
    expect(entries.map((e) => `${e.topic} ${e.group} ${e.url}`)).toEqual([
      "a billing http://h/api/a",
      "b app_Sapi_Sa_Sroute_Dts http://h/api/a",
      "c_* default http://h/x",
    ]);
  });

  it("has no triggers without functions", () => {
    expect(parseVercelJson("{}", "v").triggers).toEqual([]);
  });

  it("names the place of what is malformed", () => {
    const bad = (doc: string, says: string) =>
      expect(() => parseVercelJson(doc, "vercel.json")).toThrow(says);
    bad("{", "not valid JSON");
    bad("[]", "must hold a JSON object");
    bad('{"functions": []}', '"functions" must be an object');
    bad('{"functions": {"a.ts": 1}}', 'functions["a.ts"] must be an object');
    bad(
      '{"functions": {"a.ts": {"experimentalTriggers": {}}}}',
      "experimentalTriggers must be an array",
    );
    bad(
      '{"functions": {"a.ts": {"experimentalTriggers": [{"type": "queue/v2beta"}]}}}',
      "experimentalTriggers[0].topic",
    );
    bad(
      '{"functions": {"a.ts": {"experimentalTriggers": [{"type": "queue/v2beta", "topic": "t", "retryAfterSeconds": "60"}]}}}',
      "retryAfterSeconds must be a number",
    );
  });
});

describe("a trigger's flowControl", () => {
  const withFlow = (flowControl: unknown) =>
    JSON.stringify({
      functions: {
        "api/a.ts": {
          experimentalTriggers: [{ type: "queue/v2beta", topic: "a", flowControl }],
        },
      },
    });
  /** What the settings API answers a PUT of `{flowControl}` with: its validation's message. */
  const apiMessage = (flowControl: unknown): string => {
    try {
      validateSettings({ flowControl }, { kind: "topic", topic: "a" });
    } catch (err) {
      if (err instanceof AppError && err.code === "invalid_settings") return err.message;
      throw err;
    }
    throw new Error(`the settings API takes ${JSON.stringify(flowControl)}`);
  };

  it("is read as the gateway stores it: key lowercased, defaults filled in", () => {
    const { triggers, warnings } = parseVercelJson(
      withFlow({ key: "Tenant", rate: { limit: 10, periodSeconds: 60 } }),
      "vercel.json",
    );
    expect(warnings).toEqual([]);
    expect(triggers).toEqual([
      {
        file: "api/a.ts",
        topic: "a",
        flowControl: {
          key: "tenant",
          concurrency: null,
          rate: { limit: 10, periodSeconds: 60, burst: 10 },
          ordered: false,
        },
      },
    ]);
    // null is none, as in a settings document (declared: it removes what is stored).
    expect(parseVercelJson(withFlow(null), "vercel.json").triggers).toEqual([
      { file: "api/a.ts", topic: "a", flowControl: null },
    ]);
    const [entry] = planEntries(
      parseVercelJson(withFlow({ key: "tenant", ordered: true }), "v").triggers,
      new URL("http://h"),
      [],
    );
    expect(entry?.flowControl).toEqual({
      key: "tenant",
      concurrency: null,
      rate: null,
      ordered: true,
    });
  });

  it("is refused, before anything is sent, with the message the settings API gives", () => {
    for (const bad of [
      "tenant",
      {},
      { key: "tenant" },
      { key: "Vqs-Id", concurrency: 1 },
      { key: "tenant", concurrency: 0.5 },
      { key: "tenant", ordered: true, concurrency: 2 },
      { key: "tenant", rate: { limit: 1 } },
      { key: "tenant", concurrency: 1, extra: true },
    ]) {
      const message = apiMessage(bad);
      expect(() => parseVercelJson(withFlow(bad), "vercel.json"), JSON.stringify(bad)).toThrow(
        `vercel.json: functions["api/a.ts"].experimentalTriggers[0]: ${message}`,
      );
    }
  });
});

describe("planning", () => {
  const app = parseAppUrl("http://localhost:3000") as URL;

  it("names groups as the client does and derives URLs; --route wins", () => {
    const entries = planEntries(
      [
        { file: "app/api/a/route.ts", topic: "a", maxConcurrency: 3 },
        { file: "api/*.ts", topic: "b" },
      ],
      app,
      [{ file: "api/*.ts", route: "/api/b" }],
    );
    expect(entries).toEqual([
      {
        file: "app/api/a/route.ts",
        topic: "a",
        group: "app_Sapi_Sa_Sroute_Dts",
        route: "/api/a",
        url: "http://localhost:3000/api/a",
        maxConcurrency: 3,
      },
      {
        file: "api/*.ts",
        topic: "b",
        group: "api_S_2A_Dts",
        route: "/api/b",
        url: "http://localhost:3000/api/b",
      },
    ]);
  });

  it("refuses, all problems at once: no route, --route for an unknown file, a topic twice", () => {
    let err: unknown;
    try {
      planEntries(
        [
          { file: "lib/a.ts", topic: "a" },
          { file: "api/b.ts", topic: "b" },
          { file: "api/b.ts", topic: "b" },
        ],
        app,
        [{ file: "nope.ts", route: "/x" }],
      );
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const message = (err as Error).message;
    expect(message).toContain('"lib/a.ts"');
    expect(message).toContain('"nope.ts"');
    expect(message).toContain('declares topic "b" twice');
  });
});

describe("merge into the stored document", () => {
  const entry: DeclaredEntry = {
    file: "app/api/a/route.ts",
    topic: "a",
    group: "app_Sapi_Sa_Sroute_Dts",
    route: "/api/a",
    url: "http://localhost:3000/api/a",
  };
  const stored = (over: Partial<SettingsDocument> = {}): SettingsDocument => ({
    topic: "a",
    consumerGroup: "app_Sapi_Sa_Sroute_Dts",
    push: { url: entry.url, maxConcurrency: 10, timeoutSeconds: 300, autoAck: false },
    retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
    deadLetter: null,
    flowControl: null,
    updatedAt: "2026-01-01T00:00:00.000Z",
    ...over,
  });

  it("creates with only what the trigger says", () => {
    const m = mergeTrigger({ ...entry, retryAfterSeconds: 30, maxConcurrency: 4 }, null);
    expect(m.action).toBe("create");
    expect(m.body).toEqual({
      push: { url: entry.url, maxConcurrency: 4 },
      retry: { afterSeconds: 30 },
    });
    expect(m.changes).toEqual([
      { field: "push.url", to: entry.url },
      { field: "push.maxConcurrency", from: 10, to: 4 },
      { field: "retry.afterSeconds", from: 60, to: 30 },
    ]);
  });

  it("is unchanged when the stored document already says it", () => {
    expect(mergeTrigger(entry, stored()).action).toBe("unchanged");
    expect(mergeTrigger(entry, stored()).changes).toEqual([]);
  });

  it("keeps what vercel.json cannot say: timeout, autoAck, a chosen backoff cap, dead letters", () => {
    const current = stored({
      push: { url: "http://old/x", maxConcurrency: 7, timeoutSeconds: 20, autoAck: true },
      retry: { afterSeconds: 5, initialDelaySeconds: 9, maxBackoffSeconds: 600 },
      deadLetter: { topic: "a-dead", maxDeliveries: 4 },
    });
    const m = mergeTrigger({ ...entry, retryAfterSeconds: 10 }, current);
    expect(m.action).toBe("update");
    expect(m.body).toEqual({
      push: { url: entry.url, timeoutSeconds: 20, autoAck: true },
      retry: { afterSeconds: 10, maxBackoffSeconds: 600 },
      deadLetter: { topic: "a-dead", maxDeliveries: 4 },
    });
    // What vercel.json owns and no longer says goes back to its default.
    expect(m.changes).toEqual([
      { field: "push.url", from: "http://old/x", to: entry.url },
      { field: "push.maxConcurrency", from: 7, to: 10 },
      { field: "retry.afterSeconds", from: 5, to: 10 },
      { field: "retry.initialDelaySeconds", from: 9, to: 0 },
    ]);
  });

  it("lets the gateway derive a default backoff cap from the new afterSeconds", () => {
    const m = mergeTrigger({ ...entry, retryAfterSeconds: 7200 }, stored());
    expect(m.body.retry).toEqual({ afterSeconds: 7200 });
    expect(m.changes).toContainEqual({ field: "retry.maxBackoffSeconds", from: 3600, to: 7200 });
  });

  it("adds push to a document that has only dead letters", () => {
    const m = mergeTrigger(
      entry,
      stored({ push: null, deadLetter: { topic: "d", maxDeliveries: 2 } }),
    );
    expect(m.action).toBe("update");
    expect(m.body).toEqual({
      push: { url: entry.url },
      deadLetter: { topic: "d", maxDeliveries: 2 },
    });
    expect(m.changes).toEqual([{ field: "push.url", to: entry.url }]);
  });

  const flow = { key: "tenant", concurrency: 2, rate: null, ordered: false };

  it("stores the trigger's flowControl and reports its fields", () => {
    const m = mergeTrigger({ ...entry, flowControl: flow }, null);
    expect(m.action).toBe("create");
    expect(m.body).toEqual({ push: { url: entry.url }, flowControl: flow });
    expect(m.changes).toEqual([
      { field: "push.url", to: entry.url },
      { field: "flowControl.key", to: "tenant" },
      { field: "flowControl.concurrency", to: 2 },
    ]);
    expect(
      mergeTrigger({ ...entry, flowControl: flow }, stored({ flowControl: flow })).action,
    ).toBe("unchanged");
  });

  it("changes flowControl field by field: limits replaced, a rate added", () => {
    const rate = { limit: 5, periodSeconds: 1, burst: 5 };
    const m = mergeTrigger(
      { ...entry, flowControl: { ...flow, concurrency: null, rate } },
      stored({ flowControl: flow }),
    );
    expect(m.action).toBe("update");
    expect(m.body.flowControl).toEqual({ ...flow, concurrency: null, rate });
    expect(m.changes).toEqual([
      { field: "flowControl.concurrency", from: 2 },
      { field: "flowControl.rate.limit", to: 5 },
      { field: "flowControl.rate.periodSeconds", to: 1 },
      { field: "flowControl.rate.burst", to: 5 },
    ]);
    // A rate removed: its limit says it.
    const back = mergeTrigger(
      { ...entry, flowControl: flow },
      stored({ flowControl: { ...flow, rate } }),
    );
    expect(back.changes).toEqual([{ field: "flowControl.rate.limit", from: 5 }]);
  });

  it("keeps a stored flowControl the trigger leaves out, and removes it when the trigger says null", () => {
    const current = stored({
      flowControl: { ...flow, rate: { limit: 5, periodSeconds: 1, burst: 5 }, ordered: false },
      deadLetter: { topic: "a-dead", maxDeliveries: 4 },
    });
    // A framework's generated trigger cannot declare it: an operator's flowControl stays.
    const kept = mergeTrigger(entry, current);
    expect(kept.action).toBe("unchanged");
    expect(kept.body.flowControl).toEqual(current.flowControl);
    const m = mergeTrigger({ ...entry, flowControl: null }, current);
    expect(m.action).toBe("update");
    expect(m.body).toEqual({
      push: { url: entry.url, timeoutSeconds: 300, autoAck: false },
      deadLetter: { topic: "a-dead", maxDeliveries: 4 },
    });
    expect(m.changes).toEqual([{ field: "flowControl.key", from: "tenant" }]);
  });
});

describe("prune", () => {
  const doc = (topic: string, group: string, over: Partial<SettingsDocument> = {}) =>
    ({
      topic,
      consumerGroup: group,
      push: {
        url: "http://localhost:3000/x",
        maxConcurrency: 10,
        timeoutSeconds: 300,
        autoAck: false,
      },
      retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: null,
      flowControl: null,
      updatedAt: "2026-01-01T00:00:00.000Z",
      ...over,
    }) satisfies SettingsDocument;

  it("takes documents with push that are no longer declared, never those without push", () => {
    const docs = [
      doc("a", "kept"),
      doc("a", "gone"),
      doc("p_*", "gone"),
      doc("a", "polled", { push: null, deadLetter: { topic: "d", maxDeliveries: 3 } }),
      doc("b", "polled", { push: null }),
    ];
    const declared = new Set([entryKey("a", "kept")]);
    expect(pruneCandidates(docs, declared).map((d) => `${d.topic}/${d.consumerGroup}`)).toEqual([
      "a/gone",
      "p_*/gone",
    ]);
  });

  it("deletes a document with nothing but push and retry timing", () => {
    const p = pruneDocument(
      doc("a", "g", {
        retry: { afterSeconds: 5, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      }),
    );
    expect(p.body).toBeNull();
    expect(p.changes).toEqual([
      { field: "push.url", from: "http://localhost:3000/x" },
      { field: "retry.afterSeconds", from: 5, to: 60 },
    ]);
  });

  it("keeps dead letters (and retry timing) and removes only push", () => {
    const d = doc("a", "g", {
      push: {
        url: "http://localhost:3000/x",
        maxConcurrency: 3,
        timeoutSeconds: 300,
        autoAck: false,
      },
      deadLetter: { topic: "d", maxDeliveries: 3 },
    });
    const p = pruneDocument(d);
    expect(p.body).toEqual({ retry: d.retry, deadLetter: d.deadLetter });
    expect(p.changes).toEqual([{ field: "push.url", from: "http://localhost:3000/x" }]);
  });

  it("keeps flowControl, removing only push: the document stays for it", () => {
    const flowControl = { key: "tenant", concurrency: 1, rate: null, ordered: true };
    const d = doc("a", "g", { flowControl });
    const p = pruneDocument(d);
    expect(p.body).toEqual({ retry: d.retry, deadLetter: null, flowControl });
    expect(p.changes).toEqual([{ field: "push.url", from: "http://localhost:3000/x" }]);
  });

  it("diff of equal documents is empty", () => {
    expect(diff(doc("a", "g"), doc("a", "g"))).toEqual([]);
    expect(diff(null, null)).toEqual([]);
  });
});

describe("Build Output API", () => {
  it("reads every function's triggers, following links and stopping at cycles", async () => {
    const dir = await mkdtemp(join(tmpdir(), "vqs-bo-unit-"));
    try {
      const fns = join(dir, "functions");
      await mkdir(join(fns, "api/a.func"), { recursive: true });
      await mkdir(join(fns, "api/plain.func"), { recursive: true });
      await writeFile(
        join(fns, "api/a.func/.vc-config.json"),
        JSON.stringify({
          experimentalTriggers: [
            { type: "queue/v2beta", topic: "t_*", consumer: "default", retryAfterSeconds: 5 },
          ],
        }),
      );
      await writeFile(join(fns, "api/plain.func/.vc-config.json"), JSON.stringify({}));
      await symlink(join(fns, "api/a.func"), join(fns, "api/b.func"), "dir");
      await symlink(fns, join(fns, "api/loop"), "dir");
      const { triggers, warnings } = await readBuildOutput(dir, "out");
      expect(warnings).toEqual([]);
      expect(triggers).toEqual([
        {
          file: "functions/api/a.func",
          route: "/api/a",
          topic: "t_*",
          consumer: "default",
          retryAfterSeconds: 5,
        },
        {
          file: "functions/api/b.func",
          route: "/api/b",
          topic: "t_*",
          consumer: "default",
          retryAfterSeconds: 5,
        },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// The settings body (every field, every bound), topic patterns, and which document applies.
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.js";
import { makeNamespace } from "../../../src/queue/namespace.js";
import {
  DEFAULT_SETTINGS,
  type ConsumerSettings,
  type SettingsEntry,
} from "../../../src/queue/settings/consumer-settings.js";
import { parsePushUrlPrefix } from "../../../src/queue/settings/push-destinations.js";
import { SettingsIndex } from "../../../src/queue/settings/settings-index.js";
import { appliesTo, parseTopicTarget } from "../../../src/queue/settings/topic-pattern.js";
import { parseSettings, validateSettings } from "../../../src/queue/settings/validate.js";

const orders = parseTopicTarget("orders");
const allow = ["http://localhost:*", "https://hooks.example.com/vqs"].map(parsePushUrlPrefix);

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("not refused");
}

const invalid = (body: unknown, target = orders) => {
  const r = refusal(() => validateSettings(body, target));
  expect(r.code).toBe("invalid_settings");
  return r.message;
};

describe("settings body", () => {
  it("fills in every default", () => {
    expect(validateSettings({}, orders)).toEqual(DEFAULT_SETTINGS);
    expect(validateSettings({ push: { url: "http://localhost:3000/q" } }, orders)).toEqual({
      push: {
        url: "http://localhost:3000/q",
        maxConcurrency: 10,
        timeoutSeconds: 300,
        autoAck: false,
      },
      retry: { afterSeconds: 60, initialDelaySeconds: 0, maxBackoffSeconds: 3600 },
      deadLetter: null,
      flowControl: null,
    } satisfies ConsumerSettings);
    expect(validateSettings({ push: null, deadLetter: null }, orders)).toEqual(DEFAULT_SETTINGS);
  });

  it("keeps every given field", () => {
    const body = {
      push: {
        url: "https://hooks.example.com/vqs/a?x=1",
        maxConcurrency: 1000,
        timeoutSeconds: 1,
        autoAck: true,
      },
      retry: { afterSeconds: 0, initialDelaySeconds: 604800, maxBackoffSeconds: 0 },
      deadLetter: { topic: "orders-dead", maxDeliveries: 1000 },
      flowControl: null,
    };
    expect(validateSettings(body, orders)).toEqual(body);
    const polled = {
      ...body,
      push: null,
      flowControl: { key: "tenant", concurrency: 1000, rate: null, ordered: false },
    };
    expect(validateSettings(polled, orders)).toEqual(polled);
  });

  it("refuses a body that is not an object", () => {
    for (const body of [null, [], [{}], "x", 1, true]) {
      expect(invalid(body)).toBe("The settings must be a JSON object.");
    }
  });

  it("refuses unknown fields at every level, naming their path", () => {
    expect(invalid({ pushh: {} })).toBe("Unknown field pushh.");
    expect(invalid({ topic: "orders" })).toBe("Unknown field topic.");
    expect(invalid({ push: { url: "http://localhost", retries: 1 } })).toBe(
      "Unknown field push.retries.",
    );
    expect(invalid({ retry: { after: 1 } })).toBe("Unknown field retry.after.");
    expect(invalid({ deadLetter: { topic: "d", maxDeliveries: 1, x: 0 } })).toBe(
      "Unknown field deadLetter.x.",
    );
    expect(invalid(JSON.parse('{"__proto__": {"x": 1}}'))).toBe("Unknown field __proto__.");
    expect(invalid({ [`a b${"c".repeat(100)}`]: 1 })).toBe(
      `Unknown field ${JSON.stringify(`a b${"c".repeat(61)}`)}.`,
    );
  });

  const bounds: [string, string, number, number][] = [
    ["push", "maxConcurrency", 1, 1000],
    ["push", "timeoutSeconds", 1, 3600],
    ["retry", "afterSeconds", 0, 86400],
    ["retry", "initialDelaySeconds", 0, 604800],
    ["retry", "maxBackoffSeconds", 0, 86400],
    ["deadLetter", "maxDeliveries", 1, 1000],
  ];
  const withField = (section: string, field: string, value: unknown) => {
    const base: Record<string, Record<string, unknown>> = {
      push: { url: "http://localhost" },
      retry: section === "retry" && field === "maxBackoffSeconds" ? { afterSeconds: 0 } : {},
      deadLetter: { topic: "dead", maxDeliveries: 1 },
    };
    base[section]![field] = value;
    return base;
  };

  it("takes each integer at its bounds and refuses one beyond, and non-integers", () => {
    for (const [section, field, min, max] of bounds) {
      for (const ok of [min, max]) {
        const s = validateSettings(withField(section, field, ok), orders) as unknown as Record<
          string,
          Record<string, unknown>
        >;
        expect(s[section]![field]).toBe(ok);
      }
      for (const bad of [min - 1, max + 1, 1.5, "5", null, true, [], {}, Number.NaN]) {
        expect(invalid(withField(section, field, bad))).toMatch(
          new RegExp(
            `^${section}\\.${field} must be an integer from (\\d+|retry\\.afterSeconds \\(0\\)) to ${max}\\.$`,
          ),
        );
      }
    }
  });

  it("needs retry.maxBackoffSeconds >= retry.afterSeconds, and defaults it to at least that", () => {
    expect(invalid({ retry: { afterSeconds: 100, maxBackoffSeconds: 99 } })).toBe(
      "retry.maxBackoffSeconds must be an integer from retry.afterSeconds (100) to 86400.",
    );
    expect(invalid({ retry: { maxBackoffSeconds: 59 } })).toMatch(/afterSeconds \(60\)/);
    expect(
      validateSettings({ retry: { afterSeconds: 100, maxBackoffSeconds: 100 } }, orders).retry,
    ).toEqual({ afterSeconds: 100, initialDelaySeconds: 0, maxBackoffSeconds: 100 });
    expect(
      validateSettings({ retry: { afterSeconds: 7200 } }, orders).retry.maxBackoffSeconds,
    ).toBe(7200);
  });

  it("checks push.autoAck, and the shape of each section", () => {
    for (const bad of ["true", 1, null]) {
      expect(invalid({ push: { url: "http://localhost", autoAck: bad } })).toBe(
        "push.autoAck must be true or false.",
      );
    }
    expect(invalid({ push: "http://localhost" })).toBe("push must be an object or null.");
    expect(invalid({ push: {} })).toBe("push.url is required when push is given.");
    expect(invalid({ retry: null })).toBe("retry must be an object.");
    expect(invalid({ retry: [] })).toBe("retry must be an object.");
    expect(invalid({ deadLetter: 5 })).toBe("deadLetter must be an object or null.");
    expect(invalid({ deadLetter: { maxDeliveries: 5 } })).toBe(
      "deadLetter.topic is required when deadLetter is given.",
    );
    expect(invalid({ deadLetter: { topic: "d" } })).toBe(
      "deadLetter.maxDeliveries is required when deadLetter is given.",
    );
  });

  it("needs push.url to be an absolute http(s) URL without credentials, normalized when stored", () => {
    const url = (u: unknown) => validateSettings({ push: { url: u } }, orders).push?.url;
    expect(url("HTTP://LOCALHOST:80/a/./b/../c?x=1")).toBe("http://localhost/a/c?x=1");
    expect(url("https://[::1]:8443/")).toBe("https://[::1]:8443/");
    for (const bad of [
      "file:///etc/passwd",
      "javascript:alert(1)",
      "ftp://localhost/",
      "/relative",
      "localhost:3000",
      "http:localhost",
      "http:/localhost",
      " http://localhost",
      "http://localhost /x",
      "http://localhost\r\nX-Injected: 1",
      "http://localhost\t/x",
      "http://local\nhost",
      "http://localhost/\u00e9",
      "http://localhost\\@evil.com",
      `http://localhost/${"x".repeat(2048)}`,
      5,
      null,
    ]) {
      expect(invalid({ push: { url: bad } })).toMatch(/^push\.url /);
    }
    for (const bad of [
      "http://user:pw@localhost/",
      "http://localhost@evil.com/",
      "http://@localhost/",
      "http://:pw@localhost/",
    ]) {
      expect(invalid({ push: { url: bad } })).toBe(
        "push.url must not contain a user or password: they would end up in logs.",
      );
    }
    expect(invalid({ push: { url: "http://localhost/#x" } })).toBe(
      "push.url must not have a fragment.",
    );
    expect(invalid({ push: { url: "http://" } })).toMatch(/^push\.url /);
  });

  it("needs deadLetter.topic to be another topic name, outside the pattern's own topics", () => {
    expect(invalid({ deadLetter: { topic: "orders", maxDeliveries: 1 } })).toBe(
      "deadLetter.topic must not be the group's own topic.",
    );
    for (const bad of ["a.b", "a*", "", "x".repeat(256), 5]) {
      expect(invalid({ deadLetter: { topic: bad, maxDeliveries: 1 } })).toMatch(
        /^deadLetter\.topic must be a topic name/,
      );
    }
    const pattern = parseTopicTarget("orders_*");
    for (const self of ["orders_", "orders_dead"]) {
      expect(invalid({ deadLetter: { topic: self, maxDeliveries: 1 } }, pattern)).toBe(
        `deadLetter.topic must not be a topic the pattern orders_* matches: messages would be dead-lettered into their own topic.`,
      );
    }
    for (const ok of ["orders", "orders-dead", "dead"]) {
      expect(
        validateSettings({ deadLetter: { topic: ok, maxDeliveries: 1 } }, pattern).deadLetter,
      ).toEqual({ topic: ok, maxDeliveries: 1 });
    }
  });

  it("refuses a push URL outside the allow-list with 403, after every 400", () => {
    const body = (url: string) => ({ push: { url } });
    expect(parseSettings(body("http://localhost:3000/q"), orders, allow).push?.url).toBe(
      "http://localhost:3000/q",
    );
    expect(refusal(() => parseSettings(body("http://evil.com/"), orders, allow)).code).toBe(
      "push_destination_not_allowed",
    );
    expect(
      refusal(() => parseSettings({ ...body("http://evil.com/"), x: 1 }, orders, allow)).code,
    ).toBe("invalid_settings");
    const off = refusal(() => parseSettings(body("http://localhost/"), orders, null));
    expect(off.code).toBe("push_destination_not_allowed");
    expect(off.message).toMatch(/operator must set VQS_PUSH_ALLOWED_URLS/);
    expect(parseSettings({ retry: { afterSeconds: 5 } }, orders, null).push).toBeNull();
  });
});

describe("flow control settings", () => {
  const flow = (v: unknown) => validateSettings({ flowControl: v }, orders).flowControl;

  it("takes a header name (lowercased) and a concurrency per key", () => {
    expect(flow({ key: "Tenant-Id", concurrency: 3 })).toEqual({
      key: "tenant-id",
      concurrency: 3,
      rate: null,
      ordered: false,
    });
    expect(flow(null)).toBeNull();
    expect(validateSettings({}, orders).flowControl).toBeNull();
  });

  it("refuses a missing or malformed key, and headers a message never carries", () => {
    for (const key of [undefined, "", "a b", "a:b", "é", "x".repeat(65), 5, null]) {
      expect(invalid({ flowControl: { key, concurrency: 1 } })).toMatch(/^flowControl\.key/);
    }
    for (const key of ["Vqs-Key", "content-type", "ce-id", "authorization", "traceparent"]) {
      expect(invalid({ flowControl: { key, concurrency: 1 } })).toMatch(/keeps as its own/);
    }
  });

  it("refuses a concurrency out of bounds, or none, and unknown fields", () => {
    for (const concurrency of [0, 1001, 1.5, "2", true]) {
      expect(invalid({ flowControl: { key: "k", concurrency } })).toMatch(
        /^flowControl\.concurrency/,
      );
    }
    for (const concurrency of [undefined, null]) {
      expect(invalid({ flowControl: { key: "k", concurrency } })).toMatch(
        /^flowControl needs a limit: concurrency .*, rate or ordered/,
      );
    }
    expect(invalid({ flowControl: { key: "k", concurrency: 1, keys: 1 } })).toMatch(
      /Unknown field flowControl\.keys/,
    );
    expect(invalid({ flowControl: "k" })).toMatch(/flowControl must be an object/);
  });

  it("takes a rate per key (burst: limit unless given), checked in shape and horizon", () => {
    const base = { key: "k", concurrency: null };
    expect(flow({ ...base, rate: { limit: 10, periodSeconds: 1 } })).toEqual({
      key: "k",
      concurrency: null,
      rate: { limit: 10, periodSeconds: 1, burst: 10 },
      ordered: false,
    });
    expect(flow({ key: "k", rate: { limit: 6, periodSeconds: 60, burst: 1 } })?.rate).toEqual({
      limit: 6,
      periodSeconds: 60,
      burst: 1,
    });
    expect(invalid({ flowControl: { ...base, rate: { limit: 0, periodSeconds: 1 } } })).toMatch(
      /flowControl\.rate\.limit must be an integer/,
    );
    expect(invalid({ flowControl: { ...base, rate: { limit: 1 } } })).toMatch(/are required/);
    expect(
      invalid({ flowControl: { ...base, rate: { limit: 1, periodSeconds: 1, per: 2 } } }),
    ).toMatch(/Unknown field flowControl\.rate\.per/);
    // Beyond what a key's record remembers (3 h): refused, not silently reset.
    expect(
      invalid({ flowControl: { ...base, rate: { limit: 1, periodSeconds: 86_400 } } }),
    ).toMatch(/periodSeconds \* burst \/ limit must be at most 10800/);
    expect(flow({ ...base, rate: { limit: 24, periodSeconds: 86_400, burst: 1 } })?.rate).toEqual({
      limit: 24,
      periodSeconds: 86_400,
      burst: 1,
    });
  });

  it("takes ordered (one in flight per key), refused with a concurrency above 1", () => {
    expect(flow({ key: "k", ordered: true })).toEqual({
      key: "k",
      concurrency: null,
      rate: null,
      ordered: true,
    });
    expect(flow({ key: "k", concurrency: 1, ordered: true })?.concurrency).toBe(1);
    expect(invalid({ flowControl: { key: "k", concurrency: 2, ordered: true } })).toMatch(
      /flowControl\.ordered allows one message of a key in flight: concurrency must be 1/,
    );
    expect(invalid({ flowControl: { key: "k", ordered: "yes" } })).toMatch(/true or false/);
    expect(invalid({ flowControl: { key: "k", ordered: false } })).toMatch(/needs a limit/);
  });

  it("takes concurrency, rate and ordered per key on a pushed group, as on a polled one", () => {
    const push = { url: "http://localhost:3000/q" };
    const stored = validateSettings({ push, flowControl: { key: "K", concurrency: 2 } }, orders);
    expect(stored.flowControl).toEqual({ key: "k", concurrency: 2, rate: null, ordered: false });
    expect(stored.push?.url).toBe(push.url);
    const ordered = validateSettings({ push, flowControl: { key: "k", ordered: true } }, orders);
    expect(ordered.flowControl).toMatchObject({ key: "k", ordered: true, rate: null });
    const rate = { limit: 2, periodSeconds: 1 };
    const rated = validateSettings({ push, flowControl: { key: "k", rate } }, orders);
    expect(rated.flowControl?.rate).toMatchObject(rate);
    expect(rated.push?.url).toBe(push.url);
    // The same checks as without push: ordered allows concurrency 1 or null only.
    expect(invalid({ push, flowControl: { key: "k", ordered: true, concurrency: 2 } })).toMatch(
      /ordered/,
    );
  });
});

describe("topic patterns", () => {
  it("are a valid name followed by exactly one trailing '*'", () => {
    expect(parseTopicTarget("orders")).toEqual({ kind: "topic", topic: "orders" });
    expect(parseTopicTarget("__wkf_step_*")).toEqual({
      kind: "pattern",
      pattern: "__wkf_step_*",
      prefix: "__wkf_step_",
    });
    expect(parseTopicTarget("a*")).toMatchObject({ prefix: "a" });
    expect(parseTopicTarget(`${"x".repeat(255)}*`)).toMatchObject({ kind: "pattern" });
    for (const bad of [
      "*",
      "**",
      "a**",
      "*a",
      "a*b",
      "a*b*",
      "a.b*",
      "a b*",
      `${"x".repeat(256)}*`,
    ]) {
      expect(refusal(() => parseTopicTarget(bad)).code).toBe("invalid_topic_pattern");
    }
    for (const bad of ["", "a.b", "a b", "x".repeat(256)]) {
      expect(refusal(() => parseTopicTarget(bad)).code).toBe("invalid_topic_name");
    }
  });

  it("apply to every topic starting with the prefix, the prefix itself included", () => {
    expect(appliesTo("orders_*", "orders_eu")).toBe(true);
    expect(appliesTo("orders_*", "orders_")).toBe(true);
    expect(appliesTo("orders_*", "orders")).toBe(false);
    expect(appliesTo("orders_*", "Orders_eu")).toBe(false);
    expect(appliesTo("orders", "orders")).toBe(true);
    expect(appliesTo("orders", "orders_eu")).toBe(false);
  });
});

describe("which settings apply", () => {
  const ns = makeNamespace("t", "p", "e", null);
  const other = makeNamespace("t", "p", "e", "dpl_1");
  let revision = 0;
  const entry = (topic: string, group: string, afterSeconds: number, n = ns): SettingsEntry => ({
    namespace: n,
    topic,
    group,
    settings: { ...DEFAULT_SETTINGS, retry: { ...DEFAULT_SETTINGS.retry, afterSeconds } },
    updatedAt: new Date(0).toISOString(),
    revision: ++revision,
  });
  const after = (index: SettingsIndex, topic: string, group = "g", n = ns) =>
    index.effective(n, topic, group)?.retry.afterSeconds ?? null;

  it("prefers the topic's own document, then the longest matching prefix", () => {
    const index = new SettingsIndex();
    index.upsert("1", entry("a*", "g", 1));
    index.upsert("2", entry("ab*", "g", 2));
    index.upsert("3", entry("abc_*", "g", 3));
    index.upsert("4", entry("abc_x", "g", 4));
    index.upsert("5", entry("ab*", "other", 5));
    expect(after(index, "abc_x")).toBe(4);
    expect(after(index, "abc_y")).toBe(3);
    expect(after(index, "abc")).toBe(2);
    expect(after(index, "ab")).toBe(2);
    expect(after(index, "a")).toBe(1);
    expect(after(index, "b")).toBeNull();
    expect(after(index, "abc_y", "other")).toBe(5);
    expect(after(index, "a", "other")).toBeNull();
    expect(after(index, "abc_x", "g", other)).toBeNull();
    expect(index.effectiveEntry(ns, "abc_y", "g")?.topic).toBe("abc_*");
    // Many patterns (more than the topic has characters): the other search, same answers.
    for (let i = 0; i < 20; i++) index.upsert(`z${i}`, entry(`zz${i}*`, "g", 100 + i));
    expect(after(index, "abc_y")).toBe(3);
    expect(after(index, "zz12_q")).toBe(112);
    expect(after(index, "zz1")).toBe(101);
  });

  it("lists one namespace ordered by topic and group, and counts it", () => {
    const index = new SettingsIndex();
    index.upsert("1", entry("b", "g", 1));
    index.upsert("2", entry("a*", "h", 2));
    index.upsert("3", entry("a*", "g", 3));
    index.upsert("4", entry("b", "g", 4, other));
    expect(index.list(ns).map((e) => `${e.topic}/${e.group}`)).toEqual(["a*/g", "a*/h", "b/g"]);
    expect(index.count(ns)).toBe(3);
    expect(index.count(other)).toBe(1);
    expect([...index.entries()]).toHaveLength(4);
  });

  it("orders changes by revision: a late echo of an older state changes nothing", () => {
    const index = new SettingsIndex();
    const changes: string[] = [];
    index.onChange((e, deleted) => changes.push(`${deleted ? "-" : "+"}${e.revision}`));
    const v1 = entry("t", "g", 1);
    const v2 = entry("t", "g", 2);
    expect(index.upsert("k", v2)).toBe(true);
    expect(index.upsert("k", v1)).toBe(false);
    expect(index.upsert("k", v2)).toBe(false);
    expect(index.remove("k", v1.revision)).toBe(false);
    expect(after(index, "t")).toBe(2);
    expect(index.remove("k", v2.revision + 1)).toBe(true);
    expect(after(index, "t")).toBeNull();
    expect(changes).toEqual([`+${v2.revision}`, `-${v2.revision}`]);
  });

  it("keeps a removal made here against older states the watch still delivers", () => {
    const index = new SettingsIndex();
    const v1 = entry("t", "g", 1);
    index.upsert("k", v1);
    index.removeLocal("k", v1.revision);
    expect(after(index, "t")).toBeNull();
    expect(index.upsert("k", v1)).toBe(false); // the watch's echo of the put
    expect(index.remove("k", v1.revision + 1)).toBe(false); // the delete marker
    const v3 = entry("t", "g", 3);
    expect(index.upsert("k", v3)).toBe(true); // stored again later, by anyone
    expect(after(index, "t")).toBe(3);
  });

  it("replaces its contents with a replay, keeping what changed meanwhile", () => {
    const index = new SettingsIndex();
    index.upsert("gone", entry("gone", "g", 1));
    index.upsert("kept", entry("kept", "g", 2));
    index.upsert("local", entry("local", "g", 3));
    const replay = index.beginReplay();
    index.upsert("kept", entry("kept", "g", 2)); // replayed (newer revision)
    index.upsert("new", entry("new", "g", 4)); // replayed
    index.upsert("local", entry("local", "g", 5)); // stored here during the replay
    replay.finish();
    expect(index.list(ns).map((e) => e.topic)).toEqual(["kept", "local", "new"]);
    // A replay that fails before its end removes nothing.
    const failed = index.beginReplay();
    failed.cancel();
    failed.finish();
    expect(index.count(ns)).toBe(3);
  });

  it("survives a listener that throws", () => {
    const errors: unknown[] = [];
    const index = new SettingsIndex((err) => errors.push(err));
    index.onChange(() => {
      throw new Error("boom");
    });
    const seen: number[] = [];
    const stop = index.onChange((e) => seen.push(e.revision));
    const e = entry("t", "g", 1);
    index.upsert("k", e);
    stop();
    index.upsert("k", entry("t", "g", 2));
    expect(seen).toEqual([e.revision]);
    expect(errors).toHaveLength(2);
  });
});

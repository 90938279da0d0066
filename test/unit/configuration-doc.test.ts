// docs/configuration.md is the public list of settings: every variable loadConfig reads is in its
// table, every variable the table names is read by the code, and each integer's documented default
// is the one loadConfig applies. The defaults and ranges are found by asking loadConfig itself.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const page = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");

/** Each table row: the variables its first column names, and its default column. */
const rows = [
  ...page.matchAll(/^\|\s*(`[A-Z][A-Z0-9_]*`(?:,\s*`[A-Z][A-Z0-9_]*`)*)\s*\|(.*?)\|/gm),
].map((m) => ({
  names: [...m[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((n) => n[1]!),
  default: m[2]!.trim(),
}));
const documented = new Map(rows.flatMap((r) => r.names.map((n) => [n, r.default] as const)));

/** With OIDC set, so that the settings read only then are read too. */
const BASE = {
  VQS_OIDC_JWKS_URL: "https://issuer.example/jwks",
  VQS_OIDC_ISSUER: "https://issuer.example",
  VQS_OIDC_AUDIENCE: "vqs",
};

/** The variables loadConfig reads from `env`. */
function readBy(env: Record<string, string>): Set<string> {
  const names = new Set<string>();
  const spy = new Proxy(env, {
    get(target, name) {
      if (typeof name === "string") names.add(name);
      return target[name as string];
    },
  });
  loadConfig(spy);
  return names;
}

/** "NAME must be an integer from MIN to MAX": the range of an integer setting, else null. */
function integerRange(name: string): { min: number; max: number } | null {
  try {
    loadConfig({ ...BASE, [name]: "not-a-number" });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const m = new RegExp(`${name} must be an integer from (\\d+) to (\\d+)`).exec(err.message);
    if (m) return { min: Number(m[1]), max: Number(m[2]) };
  }
  return null;
}

/** The numbers of a configuration, by path ("oidc.clockToleranceSeconds"). */
function numbers(value: unknown, path = ""): Map<string, number> {
  const found = new Map<string, number>();
  if (typeof value === "number") found.set(path, value);
  else if (
    value !== null &&
    typeof value === "object" &&
    !(value instanceof Set || value instanceof Map)
  ) {
    for (const [k, v] of Object.entries(value)) {
      for (const [p, n] of numbers(v, path ? `${path}.${k}` : k)) found.set(p, n);
    }
  }
  return found;
}

/** The default of an integer setting: the number that changes when the variable is set. */
function integerDefault(name: string, range: { min: number; max: number }): number {
  const unset = numbers(loadConfig(BASE));
  for (const probe of [range.min, range.max]) {
    const set = numbers(loadConfig({ ...BASE, [name]: String(probe) }));
    const changed = [...unset].filter(([path, n]) => set.get(path) !== n);
    if (changed.length === 1) return changed[0]![1];
  }
  throw new Error(`no single setting follows ${name}`);
}

describe("the configuration reference (docs/configuration.md)", () => {
  const read = new Set([...readBy({}), ...readBy(BASE)]);

  it("lists every variable loadConfig reads", () => {
    expect(read.size).toBeGreaterThan(30);
    for (const name of read) expect(documented.has(name), name).toBe(true);
  });

  it("lists no variable the code does not read", () => {
    // NATS_SERVER_BIN is read by the embedded server and the tests, not by loadConfig.
    const elsewhere = new Set(["NATS_SERVER_BIN"]);
    for (const name of documented.keys()) {
      expect(read.has(name) || elsewhere.has(name), name).toBe(true);
    }
  });

  it("gives each integer setting the default loadConfig applies", () => {
    let integers = 0;
    for (const name of read) {
      const range = integerRange(name);
      if (!range) continue;
      integers++;
      const shown = /^`(\d+)`/.exec(documented.get(name) ?? "");
      expect(shown?.[1], `${name}'s default`).toBe(String(integerDefault(name, range)));
    }
    expect(integers).toBeGreaterThanOrEqual(15);
  });
});

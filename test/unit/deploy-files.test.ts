// Operations files checked without a cluster: every YAML and JSON file under helm/ and deploy/
// parses, the chart's values (and the example values) satisfy values.schema.json, every .Values
// path the templates use exists in values.yaml, and the alerts and dashboard name only metrics the
// gateway exports. helm itself runs in test/ops/helm-chart.test.ts, promtool in
// test/ops/alerts.test.ts.
import { Ajv } from "ajv";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { Registry } from "prom-client";
import { createMetrics } from "../../src/metrics.js";
import { regionValues } from "../helpers/chart.js";

const root = join(import.meta.dirname, "..", "..");
const chart = join(root, "helm", "vqs");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

const templatesDir = join(chart, "templates");
const plainFiles = [...files(join(root, "helm")), ...files(join(root, "deploy"))].filter(
  (f) => !f.startsWith(templatesDir),
);

function loadValues(file: string): Record<string, unknown> {
  return parse(readFileSync(file, "utf8")) as Record<string, unknown>;
}

function merge(a: unknown, b: unknown): unknown {
  if (typeof a !== "object" || a === null || Array.isArray(a)) return b;
  if (typeof b !== "object" || b === null || Array.isArray(b)) return b;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b)) out[k] = merge(out[k], v);
  return out;
}

describe("helm/ and deploy/ files", () => {
  it("parse: every YAML and JSON file outside the chart templates", () => {
    expect(plainFiles.length).toBeGreaterThan(10);
    for (const f of plainFiles) {
      const text = readFileSync(f, "utf8");
      if (f.endsWith(".json"))
        expect(() => JSON.parse(text) as unknown, relative(root, f)).not.toThrow();
      if (f.endsWith(".yaml") || f.endsWith(".yml")) {
        for (const doc of parseAllDocuments(text))
          expect(doc.errors, relative(root, f)).toEqual([]);
      }
    }
  });

  it("values.yaml and a complete region's values satisfy values.schema.json", () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(
      JSON.parse(readFileSync(join(chart, "values.schema.json"), "utf8")) as object,
    );
    const defaults = loadValues(join(chart, "values.yaml"));
    expect(validate(defaults), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(merge(defaults, regionValues)), JSON.stringify(validate.errors)).toBe(true);
    const bad = merge(defaults, {
      ...regionValues,
      secret: { receiptSecret: "short" },
      surprise: 1,
    });
    expect(validate(bad)).toBe(false);
  });

  it("every .Values path used by a template exists in values.yaml", () => {
    const values = loadValues(join(chart, "values.yaml"));
    const missing: string[] = [];
    for (const f of files(templatesDir)) {
      for (const m of readFileSync(f, "utf8").matchAll(/\.Values((?:\.[A-Za-z0-9_]+)+)/g)) {
        let node: unknown = values;
        for (const key of m[1]!.slice(1).split(".")) {
          if (typeof node !== "object" || node === null || !(key in node)) {
            missing.push(`${relative(root, f)}: .Values${m[1]!}`);
            break;
          }
          node = (node as Record<string, unknown>)[key];
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("alerts and the dashboard use only metrics the gateway exports", async () => {
    const registry = new Registry();
    createMetrics(registry, { groupStatsRefreshMs: 1000 });
    const exported = new Set(
      (await registry.getMetricsAsJSON()).flatMap((m) =>
        String(m.type) === "histogram"
          ? [m.name, `${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`]
          : [m.name],
      ),
    );
    const used = new Set<string>();
    for (const f of ["helm/vqs/files/alerts.yml", "helm/vqs/files/vqs-dashboard.json"]) {
      for (const m of readFileSync(join(root, f), "utf8").matchAll(/\bvqs_[a-z_]*[a-z]\b/g))
        used.add(m[0]);
    }
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });
});

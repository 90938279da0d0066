// Operations files checked without a cluster: every YAML and JSON file under helm/ and deploy/
// parses, the chart's values (and the example values) satisfy values.schema.json, every .Values
// path the templates use exists in values.yaml, and with a helm binary on PATH, `helm lint` and
// `helm template` pass.
import { Ajv } from "ajv";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { Registry } from "prom-client";
import { createMetrics } from "../../src/metrics.js";

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

/** A complete set of values for one region, as an operator would install it. */
const regionValues = {
  config: {
    natsUrl: "nats://nats.nats.svc:4222",
    region: "iad1",
    oidc: {
      jwksUrl: "https://oidc.vercel.com/team_x/.well-known/jwks",
      issuer: "https://oidc.vercel.com/team_x",
      audience: "https://vercel.com/team_x",
    },
  },
  secret: { receiptSecret: "0123456789abcdef0123456789abcdef" },
};

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

  const helm = spawnSync("helm", ["version", "--short"], { encoding: "utf8" });
  if (helm.status !== 0) {
    // Neither Debian bookworm nor unstable packages helm, and this machine reaches no other source.
    console.warn(
      "helm lint/template skipped: helm is not on PATH (install it from https://helm.sh to run it)",
    );
  }
  it.runIf(helm.status === 0)("helm lint and helm template pass (helm found on PATH)", () => {
    const set = [
      "--set",
      `config.natsUrl=${regionValues.config.natsUrl}`,
      "--set",
      "config.region=iad1",
      "--set",
      `config.oidc.jwksUrl=${regionValues.config.oidc.jwksUrl}`,
      "--set",
      `config.oidc.issuer=${regionValues.config.oidc.issuer}`,
      "--set",
      `config.oidc.audience=${regionValues.config.oidc.audience}`,
      "--set",
      `secret.receiptSecret=${regionValues.secret.receiptSecret}`,
    ];
    const lint = spawnSync("helm", ["lint", chart, ...set], { encoding: "utf8" });
    expect(lint.status, lint.stdout + lint.stderr).toBe(0);
    const tpl = spawnSync("helm", ["template", "vqs", chart, ...set], { encoding: "utf8" });
    expect(tpl.status, tpl.stderr).toBe(0);
    for (const doc of parseAllDocuments(tpl.stdout)) expect(doc.errors).toEqual([]);
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
    for (const f of ["deploy/prometheus/alerts.yml", "deploy/grafana/vqs-dashboard.json"]) {
      for (const m of readFileSync(join(root, f), "utf8").matchAll(/\bvqs_[a-z_]*[a-z]\b/g))
        used.add(m[0]);
    }
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });

  const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  it.runIf(promtool.status === 0)("alert rules pass promtool (promtool found on PATH)", () => {
    const r = spawnSync(
      "promtool",
      ["check", "rules", join(root, "deploy", "prometheus", "alerts.yml")],
      {
        encoding: "utf8",
      },
    );
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });
});

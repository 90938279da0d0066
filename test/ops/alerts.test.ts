// The alert rules (helm/vqs/files/alerts.yml, linked from deploy/prometheus/alerts.yml) checked by
// the real promtool: `check rules`, and `test rules` with deploy/prometheus/alerts.test.yml, whose
// cases must cover every alert both ways (series that fire it, series that must not). Each alert's
// runbook_url names an existing section of docs/operations.md. promtool comes from Debian's
// prometheus package (scripts/ensure-promtool.mjs, npm test's pretest); without it these fail.
import { spawnSync } from "node:child_process";
import { lstatSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { root } from "../helpers/chart.js";

const rulesFile = join(root, "deploy", "prometheus", "alerts.yml");
const testsFile = join(root, "deploy", "prometheus", "alerts.test.yml");

interface Rule {
  alert?: string;
  annotations?: Record<string, string>;
}
const alerts = (parse(readFileSync(rulesFile, "utf8")) as { groups: { rules: Rule[] }[] }).groups
  .flatMap((g) => g.rules)
  .filter((r): r is Rule & { alert: string } => typeof r.alert === "string");

function promtool(...args: string[]): string {
  const bin = process.env.PROMTOOL_BIN ?? "promtool";
  const r = spawnSync(bin, args, { encoding: "utf8" });
  if (r.error) {
    throw new Error(
      `${bin} not found: run \`node scripts/ensure-promtool.mjs\` (npm test's pretest does; as ` +
        "root on Debian/Ubuntu it installs the prometheus package), or set PROMTOOL_BIN",
    );
  }
  expect(r.status, r.stdout + r.stderr).toBe(0);
  return r.stdout;
}

/** GitHub's anchor of a Markdown heading. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

describe("alert rules", () => {
  it("pass promtool check rules", () => {
    expect(promtool("check", "rules", rulesFile)).toContain(
      `SUCCESS: ${alerts.length} rules found`,
    );
  });

  it("pass their promtool unit tests, which fire and spare every alert", () => {
    const cases = (
      parse(readFileSync(testsFile, "utf8")) as {
        tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test);
    const fired = new Set(cases.filter((c) => c.exp_alerts.length > 0).map((c) => c.alertname));
    const spared = new Set(cases.filter((c) => c.exp_alerts.length === 0).map((c) => c.alertname));
    expect(alerts.length).toBeGreaterThanOrEqual(9);
    for (const { alert } of alerts) {
      expect(fired, `${alert} has no case that fires it`).toContain(alert);
      expect(spared, `${alert} has no case where it must not fire`).toContain(alert);
    }
    expect(promtool("test", "rules", testsFile)).toContain("SUCCESS");
  });

  it("are one file: deploy/ links to the chart's (and so does the dashboard)", () => {
    for (const [link, source] of [
      ["deploy/prometheus/alerts.yml", "helm/vqs/files/alerts.yml"],
      ["deploy/grafana/vqs-dashboard.json", "helm/vqs/files/vqs-dashboard.json"],
    ] as const) {
      expect(lstatSync(join(root, link)).isSymbolicLink(), link).toBe(true);
      expect(realpathSync(join(root, link))).toBe(realpathSync(join(root, source)));
    }
  });

  it("link each alert to its runbook section in docs/operations.md", () => {
    const doc = readFileSync(join(root, "docs", "operations.md"), "utf8");
    const anchors = new Set([...doc.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
    for (const { alert, annotations } of alerts) {
      const url = annotations?.runbook_url ?? "";
      expect(url, alert).toBe(`docs/operations.md#${alert.toLowerCase()}`);
      expect(anchors, `${alert}: no heading for ${url}`).toContain(url.split("#")[1]);
    }
  });
});

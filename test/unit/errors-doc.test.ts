// docs/errors.md's table is the public list of error codes: it must match the catalogue.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";

describe("error catalogue", () => {
  it("is listed row for row in docs/errors.md", () => {
    const page = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    const rows = [...page.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|\s*(.+?)\s*\|$/gm)].map(
      (m) => ({
        code: m[1],
        status: Number(m[2]),
        // Markdown escapes (a `|` inside the table, a `*` that is not emphasis) are not text.
        message: m[3]!.replace(/\\([|*_])/g, "$1"),
      }),
    );
    const catalogue = Object.entries(ERRORS).map(([code, e]) => ({
      code,
      status: e.status,
      message: e.message,
    }));
    expect(rows).toEqual(catalogue);
  });

  it("uses snake_case codes and 4xx/5xx statuses", () => {
    for (const [code, e] of Object.entries(ERRORS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(e.status).toBeGreaterThanOrEqual(400);
      expect(e.status).toBeLessThan(600);
    }
  });
});

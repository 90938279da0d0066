// The reference docs stay short enough to read: each page within its line bound, and no list
// item longer than 8 lines (a longer one is split into sub-items or a paragraph).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const BOUNDS: Record<string, number> = {
  "docs/architecture.md": 800,
  "docs/performance.md": 400,
  "docs/operations.md": 700,
};
const PAGES = [
  "README.md",
  ...["api", "architecture", "cli", "configuration", "console", "errors", "operations"].map(
    (name) => `docs/${name}.md`,
  ),
  ...["performance", "reliability", "testing"].map((name) => `docs/${name}.md`),
];
const MAX_ITEM_LINES = 8;

/** The list items of a Markdown page longer than `max` lines, as "line N: K lines". */
function longItems(text: string, max: number): string[] {
  const found: string[] = [];
  let start = 0;
  let lines = 0;
  let fenced = false;
  const end = () => {
    if (lines > max) found.push(`line ${start}: ${lines} lines`);
    lines = 0;
  };
  text.split("\n").forEach((line, index) => {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) return;
    if (/^\s*([-*]|\d+\.) /.test(line)) {
      end();
      start = index + 1;
      lines = 1;
    } else if (line.trim() === "" || line.startsWith("#")) {
      end();
    } else if (lines > 0) {
      lines += 1;
    }
  });
  end();
  return found;
}

describe("the reference docs", () => {
  it.each(Object.entries(BOUNDS))("keeps %s within %i lines", (page, bound) => {
    expect(readFileSync(page, "utf8").split("\n").length - 1).toBeLessThanOrEqual(bound);
  });

  it.each(PAGES)("has no list item over 8 lines in %s", (page) => {
    expect(longItems(readFileSync(page, "utf8"), MAX_ITEM_LINES)).toEqual([]);
  });

  it("finds a long item where there is one", () => {
    const item = ["- one", ...Array.from({ length: 8 }, () => "  more")].join("\n");
    expect(longItems(item, MAX_ITEM_LINES)).toEqual(["line 1: 9 lines"]);
    expect(longItems(item.split("\n").slice(0, 8).join("\n"), MAX_ITEM_LINES)).toEqual([]);
  });
});

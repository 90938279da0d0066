// docs/cli.md is the `vqs` tool's reference: it names every command of the program and every
// option of each, so a command or flag added in code without its documentation fails here.
import type { Command } from "commander";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../../../src/cli/program.js";
import type { Io } from "../../../src/cli/output.js";

const page = readFileSync(new URL("../../../docs/cli.md", import.meta.url), "utf8");
const sink = { isTTY: false, write: () => true };
const io: Io = { stdout: sink, stderr: sink, env: {}, cwd: process.cwd() };

/** Every command of the tree with the words that run it. */
function commands(cmd: Command, prefix: string[] = []): { words: string; cmd: Command }[] {
  return cmd.commands
    .filter((c) => c.name() !== "help")
    .flatMap((c) => {
      const words = [...prefix, c.name()];
      return [{ words: words.join(" "), cmd: c }, ...commands(c, words)];
    });
}

const program = buildProgram(io);
const all = [{ words: "", cmd: program }, ...commands(program)];

describe("the vqs reference (docs/cli.md)", () => {
  it("names every command", () => {
    expect(all.length).toBeGreaterThan(20);
    for (const { words } of all.slice(1)) expect(page, words).toContain(`vqs ${words}`);
  });

  it("names every option of every command", () => {
    for (const { words, cmd } of all) {
      for (const option of cmd.options) {
        const flag = option.long ?? option.short;
        if (!flag || ["--help", "--version"].includes(flag)) continue;
        expect(page, `vqs ${words} ${flag}`).toContain(flag);
      }
    }
  });
});

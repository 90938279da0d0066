// Shared by the command files: how a command finds its Context, and the examples every
// command's --help ends with (a test walks the command tree to hold every command to it).
import type { Command } from "commander";
import type { Context } from "../context.js";

export type ContextOf = (cmd: Command) => Context;

export function examples(cmd: Command, lines: readonly string[]): void {
  const title = lines.length === 1 ? "Example" : "Examples";
  cmd.addHelpText("after", `\n${title}:\n${lines.map((l) => `  $ ${l}`).join("\n")}\n`);
}

// Confirmation of destructive commands (purge, delete, seek, settings delete): on a terminal
// the user is asked on stderr and answers on stdin; elsewhere (a script, CI) nobody can answer,
// so the command needs --yes. Nothing is sent before the answer.
import type { Context } from "../context.js";
import { NotConfirmed } from "../errors.js";

/** Goes on when `yes`, or when the user answers y/yes; else throws NotConfirmed (exit 4). */
export async function confirm(ctx: Context, question: string, yes: boolean): Promise<void> {
  if (yes) return;
  const stdin = ctx.stdin;
  if (stdin.isTTY !== true || ctx.stderr.isTTY !== true) {
    throw new NotConfirmed(`${question}: not a terminal, nobody can confirm; pass --yes`);
  }
  ctx.stderr.write(`${question} ${ctx.out.paintErr("bold", "[y/N]")} `);
  const answer = await firstLine(stdin);
  if (!/^\s*y(es)?\s*$/i.test(answer ?? "")) {
    throw new NotConfirmed("not confirmed: nothing was changed");
  }
}

async function firstLine(input: AsyncIterable<Uint8Array | string>): Promise<string | null> {
  let text = "";
  for await (const chunk of input) {
    text += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    const nl = text.indexOf("\n");
    if (nl >= 0) return text.slice(0, nl);
  }
  return text === "" ? null : text;
}
